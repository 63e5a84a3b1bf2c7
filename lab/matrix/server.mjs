/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One server process of the matrix: the real SDK 1.32.2 server (McpServer, StreamableHTTPServerTransport) on
// node:http on 127.0.0.1 port 0, instrumented by forkwatch on the real OpenTelemetry SDK. Many cells share it: each
// session's cell comes in its URL (`/mcp/<base64url JSON>`), so one process serves every behaviour, id format and
// traffic. Configured by MATRIX_SERVER (JSON): { tag, storeUrl, shared, deliveryWindowMs }.
// stdout: `LISTENING <port>`, then `SENT <cell> <key> [live]` for every notification the app sends (the ground truth
// of what the server sent, read by the worker as it happens, so a SIGKILL loses none of it; `live`: a store-less
// process wrote it to a connected standalone stream).
// GET /__matrix/telemetry: forkwatch's Prometheus text; POST /__matrix/quiet: stop every ticker.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { eventStore, MatrixLog, remoteLog } from './store.mjs';

const require = createRequire(import.meta.url);
const { forkwatchEntry, setupServerTelemetry, loadServerSdk } = require('../server-app.cjs');
const config = JSON.parse(process.env.MATRIX_SERVER ?? '{}');
const telemetry = setupServerTelemetry(require(forkwatchEntry('cjs')), {
  instrumentation: { deliveryWindowMs: config.deliveryWindowMs ?? 400, sharedEventStore: config.shared === true },
});
const sdk = await loadServerSdk({ sdk: 'v1' }, 'cjs');
const { McpServer, HttpTransport } = sdk;
const z = sdk.z.z ?? sdk.z;
const sessions = new Map();
const tickers = new Set();
const revivals = new Map(); // an old session id -> the new one it was revived as
let globalIds = 0;
let notes = 0;

const decodeCell = url => {
  const m = /^\/mcp\/([A-Za-z0-9_-]+)/.exec(url ?? '');
  return m ? JSON.parse(Buffer.from(m[1], 'base64url').toString()) : undefined;
};

/** The event store of a session in this process, by the cell's behaviour; each stored notification on stdout. */
function storeFor(cell, sessionId) {
  const store = baseStore(cell, sessionId);
  if (!store) return undefined;
  const storeEvent = store.storeEvent;
  store.storeEvent = async (streamId, message) => {
    const id = await storeEvent(streamId, message);
    const data = message?.params?.data;
    if (data?.key)
      process.stdout.write(`STORED ${cell.id} ${JSON.stringify({ key: data.key, log: data.log, eventId: id })}\n`);
    return id;
  };
  return store;
}

function baseStore(cell, sessionId) {
  const logId = `${config.tag}:${sessionId.slice(0, 8)}`;
  if (cell.behaviour === 'none' || cell.behaviour === 'stateless') return undefined;
  if (cell.behaviour === 'correct')
    return eventStore(remoteLog(config.storeUrl, sessionId, cell.ids, `fleet:${sessionId.slice(0, 8)}`), {
      validate: true,
    });
  const unknownCursor = cell.behaviour === 'vouching' || cell.behaviour === 'fresh-live' ? 'vouch' : 'empty';
  const log = new MatrixLog({
    format: cell.ids,
    sessionId,
    logId,
    globalCounter: () => ++globalIds,
    unknownCursor,
  });
  return eventStore(log, { validate: cell.behaviour === 'revival' });
}

function mcpServer(cell, session) {
  const server = new McpServer({ name: `matrix-${config.tag}`, version: '1.0.0' }, { capabilities: { logging: {} } });
  const notify = (extra, data = {}) => {
    const key = `${config.tag}:${++notes}`;
    // A store-less process writes an event to its standalone stream's connection, or nowhere: `live` when the
    // connection is mapped as it sends (what it wrote to a connection that then died, nobody can prove lost).
    const core = session.transport?._webStandardTransport ?? session.transport;
    const live = cell.behaviour === 'none' && !extra && core?._streamMapping?.has?.('_GET_stream') === true;
    process.stdout.write(`SENT ${cell.id} ${key}${live ? ' live' : ''}\n`);
    const notification = {
      method: 'notifications/message',
      params: { level: 'info', data: { key, origin: config.tag, ...data } },
    };
    return extra ? extra.sendNotification(notification) : server.server.notification(notification);
  };
  session.notify = notify;
  server.registerTool('emit', { inputSchema: { count: z.number().int() } }, async ({ count }, extra) => {
    // Standalone-stream notifications (stored while the client is away); a stateless server has no such stream,
    // so its notifications ride the request's own stream.
    for (let i = 0; i < count; i++) await notify(cell.behaviour === 'stateless' ? extra : undefined).catch(() => {});
    return { content: [{ type: 'text', text: `emitted ${count}` }] };
  });
  return server;
}

function startTicker(session, everyMs, max) {
  let sent = 0;
  const timer = setInterval(() => {
    if (sent++ >= max || session.closed) return stop();
    session.notify(undefined, { live: true }).catch(() => {});
  }, everyMs);
  const stop = () => {
    clearInterval(timer);
    tickers.delete(stop);
  };
  tickers.add(stop);
}

/** A session: a new one (initialize), or one this process never held, claimed under `claimedId` (hydration). */
async function createSession(cell, claimedId) {
  const sessionId = claimedId ?? randomUUID();
  const session = { closed: false };
  const transport = new HttpTransport({
    sessionIdGenerator: () => sessionId,
    eventStore: storeFor(cell, sessionId),
    keepAliveMs: 200,
    onsessioninitialized: id => sessions.set(id, session),
  });
  transport.onclose = () => {
    session.closed = true;
  };
  session.transport = transport;
  await mcpServer(cell, session).connect(transport);
  if (claimedId) {
    const core = transport._webStandardTransport ?? transport;
    core.sessionId = claimedId;
    core._initialized = true;
    sessions.set(claimedId, session);
    if (cell.behaviour === 'fresh-live') startTicker(session, 150, 4);
  }
  if (cell.traffic === 'live') startTicker(session, 150, 60);
  return session;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

async function stateless(cell, req, res, body) {
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  const transport = new HttpTransport({ sessionIdGenerator: undefined });
  const server = mcpServer(cell, { closed: false });
  res.on('close', () => {
    transport.close().catch(() => {});
    server.close().catch(() => {});
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

const httpServer = createServer(async (req, res) => {
  try {
    if (req.url === '/__matrix/telemetry') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(await telemetry.scrape());
      return;
    }
    if (req.url === '/__matrix/quiet') {
      for (const stop of [...tickers]) stop();
      res.writeHead(200).end('{}');
      return;
    }
    const cell = decodeCell(req.url);
    if (!cell) {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    if (cell.behaviour === 'stateless') return await stateless(cell, req, res, body);
    const sessionId = req.headers['mcp-session-id'];
    let session = sessionId ? sessions.get(sessionId) : undefined;
    if (!session && !sessionId && req.method === 'POST') session = await createSession(cell);
    else if (!session && sessionId && cell.behaviour === 'revival') {
      // A fresh session under a new id for the one this process never held, kept for the old id's next requests.
      let revived = revivals.get(sessionId);
      if (!revived) {
        revived = randomUUID();
        revivals.set(sessionId, revived);
        await createSession(cell, revived);
      }
      session = sessions.get(revived);
      // The SDK reads rawHeaders (through @hono/node-server): the request now names the revived session.
      req.headers['mcp-session-id'] = revived;
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        if (req.rawHeaders[i].toLowerCase() === 'mcp-session-id') req.rawHeaders[i + 1] = revived;
    } else if (!session && sessionId) session = await createSession(cell, sessionId);
    await session.transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

await new Promise(resolve => httpServer.listen(0, '127.0.0.1', resolve));
process.stdout.write(`LISTENING ${httpServer.address().port}\n`);
process.on('SIGTERM', async () => {
  // A graceful stop: the streams end, then the process goes.
  for (const stop of [...tickers]) stop();
  await Promise.allSettled([...new Set(sessions.values())].map(s => s.transport.close()));
  process.exit(0);
});
