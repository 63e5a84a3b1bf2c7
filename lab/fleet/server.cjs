/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One server replica of the fleet: the real MCP SDK (1.x, CommonJS) streamable-HTTP server, with forkwatch unless
// telemetry is off (the control replica). Configured by FLEET_SERVER (JSON):
//   name, telemetry (default true), store 'shared' | 'local', storeUrl (shared), keepAliveMs, deliveryWindowMs
//   (forkwatch's delivery ledger window)
// Sessions it never saw are hydrated (a transport claims the session id without its log): the multi-node
// pattern that makes a resume on the wrong replica answer 200. Tool `emit {from, count}` sends notifications
// numbered by the app (`seq` from..from+count-1) on the session's standalone stream.
// Routes besides /mcp: GET /metrics (Prometheus), GET /__fleet/report (signals and process costs).
// Prints `LISTENING <port>` once it accepts connections.
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const path = require('node:path');
const { setupFleetTelemetry, ProcessMeter } = require('./telemetry.cjs');
const { SharedEventStore, LocalEventStore } = require('./shared-store.cjs');

const config = {
  name: 'S',
  telemetry: true,
  store: 'local',
  keepAliveMs: 5000,
  ...JSON.parse(process.env.FLEET_SERVER ?? '{}'),
};
const telemetry = config.telemetry
  ? setupFleetTelemetry({
      forkwatch: require(path.join(__dirname, '../../build/src/index.js')),
      instrumentationConfig: config.deliveryWindowMs ? { deliveryWindowMs: config.deliveryWindowMs } : {},
    })
  : undefined;
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { z } = require('zod');

const sessions = new Map();
let eventsSent = 0;
let sessionsCreated = 0;
const meter = new ProcessMeter();

async function createSession(claimedId) {
  const id = claimedId ?? randomUUID();
  sessionsCreated++;
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => id,
    eventStore: config.store === 'shared' ? new SharedEventStore(config.storeUrl, id) : new LocalEventStore(),
    keepAliveMs: config.keepAliveMs,
    onsessioninitialized: sid => sessions.set(sid, session),
  });
  const server = new McpServer({ name: `fleet-${config.name}`, version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool(
    'emit',
    { inputSchema: { from: z.number().int(), count: z.number().int() } },
    async ({ from, count }) => {
      for (let i = 0; i < count; i++) {
        eventsSent++;
        await server.server.notification({
          method: 'notifications/message',
          params: { level: 'info', data: { origin: config.name, seq: from + i } },
        });
      }
      return { content: [{ type: 'text', text: `emitted ${count}` }] };
    },
  );
  const session = { transport, server };
  transport.onclose = () => sessions.delete(id);
  await server.connect(transport);
  if (claimedId) {
    const core = transport._webStandardTransport ?? transport;
    core.sessionId = claimedId;
    core._initialized = true;
    sessions.set(claimedId, session);
  }
  return session;
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

async function report() {
  const signals = telemetry?.signals;
  return {
    name: config.name,
    telemetry: config.telemetry,
    sessionsOpen: sessions.size,
    sessionsCreated,
    signals: signals ? Object.fromEntries(signals.sessions) : {},
    latencyMs: signals?.latency.values ?? [],
    process: meter.report(eventsSent),
    metrics: telemetry ? await telemetry.scrape() : '',
  };
}

const httpServer = createServer(async (req, res) => {
  try {
    if (req.url === '/metrics') {
      res
        .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
        .end(telemetry ? await telemetry.scrape() : '');
      return;
    }
    if (req.url === '/__fleet/report') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await report()));
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let session = sessionId ? sessions.get(sessionId) : undefined;
    if (!session && !sessionId && req.method === 'POST') session = await createSession();
    else if (!session && sessionId && req.method !== 'DELETE') session = await createSession(sessionId);
    if (!session) {
      res.writeHead(404).end();
      return;
    }
    await session.transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

httpServer.listen(0, '127.0.0.1', () => {
  meter.start();
  // Heap samples while sessions are open: memory per session. Bounded by the process's life (the fleet stops it).
  setInterval(() => meter.sample(sessions.size), 5000).unref();
  process.stdout.write(`LISTENING ${httpServer.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
