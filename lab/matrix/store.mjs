/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The matrix's event stores. MatrixLog is one session's log in one id format; what it does with a cursor it never
// stored is the cell's behaviour. Every stored notification is tagged in its payload with its event id and its log,
// so the oracle knows which id and which log each event the app received came from (the app sees payloads only).
// A log lives in the server process (one store per process) or, for `correct`, in the worker's store service (one
// store for the fleet, as Redis is), reached by HTTP from every server process: it survives restarts and SIGKILL.
import { createServer } from 'node:http';
import { idMaker } from './ids.mjs';

const tag = (message, id, log) => {
  if (message?.method === 'notifications/message' && message.params?.data)
    Object.assign(message.params.data, { eventId: id, log });
};

export class MatrixLog {
  constructor({ format, sessionId, logId, globalCounter, unknownCursor }) {
    this.logId = logId;
    this.unknownCursor = unknownCursor;
    this.events = [];
    this.nextId = idMaker(format, sessionId, globalCounter);
  }

  store(streamId, message) {
    const id = this.nextId(streamId);
    tag(message, id, this.logId);
    this.events.push({ id, streamId, message });
    return id;
  }

  streamOf(cursor) {
    return this.events.find(e => e.id === cursor)?.streamId;
  }

  /** { streamId, events } for a cursor: the events after it on its stream, or the behaviour's answer if unknown. */
  replay(cursor) {
    const index = this.events.findIndex(e => e.id === cursor);
    if (index === -1) return { streamId: this.unknownCursor === 'vouch' ? '_GET_stream' : '', events: [] };
    const { streamId } = this.events[index];
    return { streamId, events: this.events.slice(index + 1).filter(e => e.streamId === streamId) };
  }
}

/** The SDK EventStore over one MatrixLog (or the store service's). `validate`: getStreamIdForEventId, so 400s. */
export function eventStore(log, { validate }) {
  const store = {
    storeEvent: async (streamId, message) => log.store(streamId, message),
    replayEventsAfter: async (cursor, { send }) => {
      const { streamId, events } = await log.replay(cursor);
      for (const e of events) await send(e.id, e.message);
      return streamId;
    },
  };
  if (validate) store.getStreamIdForEventId = async cursor => log.streamOf(cursor);
  return store;
}

/** A MatrixLog kept in the store service: same methods, over HTTP. */
export function remoteLog(serviceUrl, key, format, logId) {
  const call = async body => {
    const res = await fetch(serviceUrl, { method: 'POST', body: JSON.stringify({ key, format, logId, ...body }) });
    return res.json();
  };
  return {
    async store(streamId, message) {
      const { id } = await call({ op: 'store', streamId, message });
      tag(message, id, logId);
      return id;
    },
    streamOf: async cursor => (await call({ op: 'streamOf', cursor })).streamId,
    replay: cursor => call({ op: 'replay', cursor }),
  };
}

/** The fleet's store service (run by the worker): one MatrixLog per session key, validated cursors. */
export async function startStoreService() {
  const logs = new Map();
  let global = 0;
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    let log = logs.get(body.key);
    if (!log) {
      log = new MatrixLog({
        format: body.format,
        sessionId: body.key,
        logId: body.logId,
        globalCounter: () => ++global,
        unknownCursor: 'validate',
      });
      logs.set(body.key, log);
    }
    const out =
      body.op === 'store'
        ? { id: log.store(body.streamId, body.message) }
        : body.op === 'streamOf'
          ? { streamId: log.streamOf(body.cursor) ?? null }
          : log.replay(body.cursor);
    if (out.streamId === null) out.streamId = undefined;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
  });
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/store`,
    forget: key => logs.delete(key),
    close: () => new Promise(resolve => server.close(resolve)),
  };
}
