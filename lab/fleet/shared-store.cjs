/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fleet's event stores. SharedEventStore talks to the store service (store-service.mjs) that every server
// process shares, as a Redis-backed store would; LocalEventStore keeps the log in this process only. Both number
// events per session (1, 2, 3, ...), so a log that starts again on another process shows as a regressed id.
// LocalEventStore answers unknown cursors with '' (the SDK then answers 200 with a stream that replays nothing), as
// the SDK's own store; SharedEventStore also implements getStreamIdForEventId, as a production store should.

class SharedEventStore {
  constructor(url, sessionId) {
    this.url = url;
    this.sessionId = sessionId;
  }
  async call(path, body) {
    const res = await fetch(`${this.url}${path}`, {
      method: 'POST',
      body: JSON.stringify({ session: this.sessionId, ...body }),
    });
    if (!res.ok) throw new Error(`shared store ${path}: HTTP ${res.status}`);
    return res.json();
  }
  async storeEvent(streamId, message) {
    return (await this.call('/store', { streamId, message })).id;
  }
  // A production store answers this: the SDK then rejects a second resume of a stream that has a connection (409)
  // instead of letting it take the stream over (see docs/fleet.md, duplicate reconnects).
  async getStreamIdForEventId(eventId) {
    return (await this.call('/stream', { after: eventId })).streamId || undefined;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const { streamId, events } = await this.call('/replay', { after: lastEventId });
    for (const e of events) await send(e.id, e.message);
    return streamId;
  }
}

class LocalEventStore {
  constructor() {
    this.events = [];
  }
  async storeEvent(streamId, message) {
    const id = String(this.events.length + 1);
    this.events.push({ id, streamId, message });
    return id;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const index = this.events.findIndex(e => e.id === lastEventId);
    if (index === -1) return '';
    const { streamId } = this.events[index];
    for (const e of this.events.slice(index + 1)) if (e.streamId === streamId) await send(e.id, e.message);
    return streamId;
  }
}

module.exports = { SharedEventStore, LocalEventStore };
