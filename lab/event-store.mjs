/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A correct, configurable EventStore for the lab's MCP servers (the SDK's own example store has the
// `_GET_stream` split bug, issues #943/#2560; the lab uses that one on purpose in one scenario).
//
//   idFormat: 'sdk'          -> `<streamId>_<ms>_<rand>` like the SDK's InMemoryEventStore
//             'integer'      -> a session-wide counter: 1, 2, 3, ... (what several servers do)
//             'hex-sequence' -> `<streamId>:<16 hex digits>`, a counter per stream (Cloudflare agents' format)
//   unknownCursor: 'empty'    -> return '' (the SDK then serves 200 and a dead, keep-alive-only stream)
//                  'validate' -> implement getStreamIdForEventId, so the SDK answers 400 for unknown cursors
//                  'fresh'    -> fall through to a fresh standalone stream (200 with live events), as
//                                Cloudflare agents' McpAgent does
export class LabEventStore {
  constructor({ idFormat = 'sdk', unknownCursor = 'validate' } = {}) {
    this.idFormat = idFormat;
    this.unknownCursor = unknownCursor;
    this.events = [];
    this.counters = new Map();
    if (unknownCursor === 'validate') {
      this.getStreamIdForEventId = async eventId => this.events.find(e => e.id === eventId)?.streamId;
    }
  }

  nextId(streamId) {
    const key = this.idFormat === 'hex-sequence' ? streamId : '';
    const n = (this.counters.get(key) ?? 0) + 1;
    this.counters.set(key, n);
    if (this.idFormat === 'integer') return String(n);
    if (this.idFormat === 'hex-sequence') return `${streamId}:${n.toString(16).padStart(16, '0')}`;
    return `${streamId}_${Date.now()}_${Math.random().toString(36).slice(2, 10).padEnd(8, '0')}`;
  }

  async storeEvent(streamId, message) {
    const id = this.nextId(streamId);
    this.events.push({ id, streamId, message });
    return id;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const index = this.events.findIndex(e => e.id === lastEventId);
    if (index === -1) return this.unknownCursor === 'fresh' ? '_GET_stream' : '';
    const { streamId } = this.events[index];
    for (const event of this.events.slice(index + 1)) {
      if (event.streamId === streamId) await send(event.id, event.message);
    }
    return streamId;
  }
}
