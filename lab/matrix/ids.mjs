/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The event-id formats of the matrix, each made by the event store as the server it imitates makes it (the SDK lets
// the store choose the id), with what the ids themselves can prove: `order` is 'none' (nothing to compare), 'session'
// (one counter for every stream of a session or process: a regression proves another log, a gap proves nothing,
// tool results take numbers too) or 'stream' (a counter per stream: a regression and, once density is learned, a
// gap both prove loss). `seq` reads the counter back for the oracle (lab/matrix/oracle.mjs), never for forkwatch.
import { randomUUID } from 'node:crypto';

const b64 = text => Buffer.from(text).toString('base64');
const pad8 = () => Math.random().toString(36).slice(2, 10).padEnd(8, '0');

/** Per-stream counters of one store; `global` is shared by every store of a process (or of the shared service). */
export const ID_FORMATS = {
  sdk: {
    order: 'none',
    make: ({ streamId }) => `${streamId}_${Date.now()}_${pad8()}`,
    seq: () => undefined,
  },
  'int-session': {
    order: 'session',
    make: ({ session }) => String(session),
    seq: id => Number(id),
  },
  'int-global': {
    order: 'session',
    make: ({ global }) => String(global),
    seq: id => Number(id),
  },
  hex: {
    // Cloudflare agents' `<stream>:<16 hex digits>`.
    order: 'stream',
    make: ({ streamId, stream }) => `${streamId}:${stream.toString(16).padStart(16, '0')}`,
    seq: id => Number.parseInt(id.slice(id.lastIndexOf(':') + 1), 16),
  },
  uuid: {
    order: 'none',
    make: () => randomUUID(),
    seq: () => undefined,
  },
  rmcp: {
    // rmcp's `<index>/<http_request_id>`: the standalone stream is request 0.
    order: 'stream',
    make: ({ streamNo, stream }) => `${stream}/${streamNo}`,
    seq: id => Number(id.split('/')[0]),
  },
  csharp: {
    // The C# SDK's distributed store: `b64(session):b64(stream):<decimal>`.
    order: 'stream',
    make: ({ sessionId, streamId, stream }) => `${b64(sessionId)}:${b64(streamId)}:${stream}`,
    seq: id => Number(id.slice(id.lastIndexOf(':') + 1)),
  },
  go: {
    // Go's official SDK: `<stream>_<N>`, the standalone stream's key empty: `_N`.
    order: 'stream',
    make: ({ streamId, stream }) => `${streamId === '_GET_stream' ? '' : streamId}_${stream}`,
    seq: id => Number(id.slice(id.lastIndexOf('_') + 1)),
  },
};

/** Numbering state of one event store: counters per stream and per session, and the stream numbers (rmcp). */
export function idMaker(format, sessionId, globalCounter) {
  const spec = ID_FORMATS[format];
  if (!spec) throw new Error(`unknown id format ${format}`);
  const streams = new Map();
  let session = 0;
  return streamId => {
    let state = streams.get(streamId);
    if (!state) {
      state = { n: 0, no: streamId === '_GET_stream' ? 0 : streams.size + 1 };
      streams.set(streamId, state);
    }
    state.n++;
    session++;
    return spec.make({ streamId, sessionId, stream: state.n, streamNo: state.no, session, global: globalCounter() });
  };
}
