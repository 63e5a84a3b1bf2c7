/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The revived-session and reconnect-storm lab (issue 41): real MCP SDK servers (the web-standard transport of
// @modelcontextprotocol/sdk 1.x or @modelcontextprotocol/server 2.x, with McpServer) on node:http on 127.0.0.1,
// in the caller's process, so the caller's forkwatch patches the same classes. The apps route by Mcp-Session-Id as
// the SDK's examples do; what they do with an id they do not hold is the scenario:
//
//   revive server, `unknown`:
//     'spec'         404 Session not found (the healthy control)
//     'hydrate'      the SDK's multi-node hydration pattern: a new transport claims the id (sessionId set, marked
//                    initialized) with the app's shared store when it has one (`sharedStore`), else a fresh store
//     'uninitialized' a new transport claims the id but is not marked initialized: the SDK answers 400
//                    "Server not initialized"
//     'reissue'      a fresh session under a new id for the old one (as EMCP's recreate_missing_session does)
//   `restart()` drops every transport the process holds (the replica was replaced); the app's registry of ids
//   (what a multi-node deployment keeps in Redis) survives it.
//
//   stream server, `streams`:
//     'storm'   the standalone stream carries its first notification and is closed; after that the store has lost
//               its log (an unknown cursor: the SDK answers 200 and an empty stream), and every fresh GET stream is
//               closed at once (a server that holds no standalone stream): the TS client reconnects forever
//     'storm-ends' the storm, until the store has answered `stormLength` GETs empty: the next fresh GET stream is held
//               and carries a notification (the replica that lost the log is replaced; the run of empty reconnects
//               ends)
//     'healthy' the standalone stream is cut once after its first notification; the resume is replayed and held
//     'idle'    the standalone stream is closed after `idleMs` of quiet each time (a balancer's idle timeout), with
//               nothing new to replay on the resume
//
// Ground truth: `truth` counts what each app did (hydrations, empty answers, GETs).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { LabEventStore } from '../event-store.mjs';

/** Web Request from a node request (body read whole: MCP POSTs are small). */
async function toWebRequest(req, headerOverrides = {}) {
  const chunks = [];
  if (req.method === 'POST') for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(key, value);
  }
  for (const [key, value] of Object.entries(headerOverrides)) headers.set(key, value);
  return new Request(`http://127.0.0.1${req.url}`, {
    method: req.method,
    headers,
    body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
  });
}

/** Writes a web Response to a node response, streaming its body until either side ends. */
async function sendWebResponse(response, res) {
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  if (!response.body) return res.end();
  // A stream's headers go out now, not with its first chunk: a replay with nothing to send is answered at once.
  res.flushHeaders();
  const reader = response.body.getReader();
  res.on('close', () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away
  }
  res.end();
}

function listen(handler) {
  const server = createServer((req, res) => {
    handler(req, res).catch(error => {
      if (!res.headersSent) res.writeHead(500).end(String(error?.message ?? error));
      else res.destroy();
    });
  });
  return new Promise(resolve => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        server,
        url: `http://127.0.0.1:${port}/mcp`,
        close: () =>
          new Promise(done => {
            server.closeAllConnections?.();
            server.close(() => done());
          }),
      });
    });
  });
}

function mcpServer(McpServer) {
  const server = new McpServer({ name: 'revived-lab', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('ping', { description: 'answers pong' }, async () => ({
    content: [{ type: 'text', text: 'pong' }],
  }));
  // A request stream cut before its answer (the server's own closeSSEStream, SEP-1699): one notification, the cut,
  // then the answer, which the client gets by resuming the stream. 1.x passes `extra`, 2.x a context: both are last.
  server.registerTool('cut', { description: 'a notification, the stream cut, then the answer' }, async (...args) => {
    const extra = args[args.length - 1];
    const note = { method: 'notifications/message', params: { level: 'info', data: 'before the cut' } };
    await (extra.sendNotification ? extra.sendNotification(note) : extra.mcpReq.notify(note));
    (extra.closeSSEStream ?? extra.http?.closeSSE)?.();
    await new Promise(resolve => setTimeout(resolve, 150));
    return { content: [{ type: 'text', text: 'after the cut' }] };
  });
  return server;
}

/** A transport that claims `sessionId` without an initialize: the SDK's multi-node hydration pattern. */
function hydrated(transport, sessionId, initialized) {
  transport.sessionId = sessionId;
  if (initialized) transport._initialized = true;
  return transport;
}

/** The revive server: see the file comment. */
export async function startReviveServer({ sdk, unknown = 'spec', sharedStore }) {
  const { McpServer, WebStandardStreamableHTTPServerTransport: Transport } = sdk;
  const sessions = new Map();
  const registry = new Set();
  const truth = { initialized: 0, hydrated: 0, notFound: 0, uninitialized: 0, reissued: 0 };
  const storeFor = () => sharedStore ?? new LabEventStore({ idFormat: 'sdk', unknownCursor: 'validate' });

  async function connect(transport) {
    await mcpServer(McpServer).connect(transport);
    return transport;
  }

  async function fresh() {
    let transport;
    transport = new Transport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: storeFor(),
      onsessioninitialized: id => {
        sessions.set(id, transport);
        registry.add(id);
      },
    });
    return connect(transport);
  }

  async function forUnknown(id) {
    if (unknown === 'spec' || !registry.has(id)) return undefined;
    if (unknown === 'reissue') {
      const newId = randomUUID();
      const transport = hydrated(
        new Transport({ sessionIdGenerator: () => newId, eventStore: storeFor() }),
        newId,
        true,
      );
      sessions.set(newId, transport);
      registry.add(newId);
      truth.reissued++;
      return { transport: await connect(transport), headers: { 'mcp-session-id': newId } };
    }
    const initialized = unknown === 'hydrate';
    const transport = hydrated(
      new Transport({ sessionIdGenerator: () => id, eventStore: storeFor() }),
      id,
      initialized,
    );
    if (initialized) {
      sessions.set(id, transport);
      truth.hydrated++;
    } else truth.uninitialized++;
    return { transport: await connect(transport), headers: {} };
  }

  const http = await listen(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string') {
      const transport = await fresh();
      truth.initialized++;
      return sendWebResponse(await transport.handleRequest(await toWebRequest(req)), res);
    }
    const held = sessions.get(id);
    if (held) return sendWebResponse(await held.handleRequest(await toWebRequest(req)), res);
    const revived = await forUnknown(id);
    if (!revived) {
      truth.notFound++;
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }),
      );
    }
    return sendWebResponse(await revived.transport.handleRequest(await toWebRequest(req, revived.headers)), res);
  });

  return {
    url: http.url,
    truth,
    /** The replica was replaced: every transport it held is gone; the registry of ids survives. */
    async restart() {
      const held = [...sessions.values()];
      sessions.clear();
      await Promise.all(held.map(t => t.close().catch(() => {})));
    },
    /** Sends a log notification on every session's standalone stream. */
    async notifyAll(n) {
      for (const t of sessions.values()) {
        await t.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { n } } });
      }
    },
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => {});
      await http.close();
    },
  };
}

/** The stream server: see the file comment. */
export async function startStreamServer({ sdk, streams = 'healthy', idleMs = 6_000, stormLength = 5 }) {
  const { McpServer, WebStandardStreamableHTTPServerTransport: Transport } = sdk;
  const sessions = new Map();
  const truth = { gets: 0, resumes: 0, emptyAnswers: 0, cut: 0, notifications: 0 };
  const timers = new Set();
  const later = (ms, fn) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  async function fresh() {
    const store = new LabEventStore({
      idFormat: 'sdk',
      unknownCursor: streams.startsWith('storm') ? 'empty' : 'validate',
    });
    const session = { store, transport: undefined, notified: false };
    session.transport = new Transport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: store,
      onsessioninitialized: id => sessions.set(id, session),
    });
    await mcpServer(McpServer).connect(session.transport);
    return session;
  }

  function notify(session) {
    truth.notifications++;
    return session.transport.send({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', data: { n: truth.notifications } },
    });
  }

  /** What the app does once a GET of the session was answered. */
  function afterGet(session, isResume) {
    const { transport } = session;
    if (streams === 'storm' || streams === 'storm-ends') {
      if (!session.notified) {
        session.notified = true;
        // The first notification reaches the client, then the stream closes and the store loses its log.
        return void later(20, async () => {
          await notify(session);
          session.store.events.length = 0;
          truth.cut++;
          transport.closeStandaloneSSEStream();
        });
      }
      if (streams === 'storm-ends' && !isResume && truth.emptyAnswers >= stormLength) {
        // The storm is over: this stream is held and delivers.
        if (!session.recovered) later(20, () => notify(session));
        session.recovered = true;
        return;
      }
      // A fresh GET stream is closed at once; a resume the store cannot serve is the SDK's own empty 200.
      if (!isResume) later(0, () => transport.closeStandaloneSSEStream());
      truth.emptyAnswers++;
      return;
    }
    if (streams === 'healthy') {
      if (!session.notified) {
        session.notified = true;
        return void later(20, async () => {
          await notify(session);
          truth.cut++;
          transport.closeStandaloneSSEStream();
          later(200, () => notify(session));
        });
      }
      return;
    }
    if (streams === 'quiet') return;
    // idle: a notification on the first stream, then each stream is closed after idleMs of quiet.
    if (!session.notified) {
      session.notified = true;
      later(20, () => notify(session));
    }
    later(idleMs, () => {
      truth.cut++;
      transport.closeStandaloneSSEStream();
    });
  }

  const http = await listen(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string') {
      const session = await fresh();
      return sendWebResponse(await session.transport.handleRequest(await toWebRequest(req)), res);
    }
    const session = sessions.get(id);
    if (!session) return void res.writeHead(404).end();
    const response = await session.transport.handleRequest(await toWebRequest(req));
    if (req.method === 'GET' && response.status === 200) {
      const isResume = typeof req.headers['last-event-id'] === 'string';
      truth.gets++;
      if (isResume) truth.resumes++;
      afterGet(session, isResume);
    }
    return sendWebResponse(response, res);
  });

  return {
    url: http.url,
    truth,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const s of sessions.values()) await s.transport.close().catch(() => {});
      await http.close();
    },
  };
}
