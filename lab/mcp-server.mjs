// One MCP server process of the fork lab, built with the real @modelcontextprotocol/sdk.
// Configured by the LAB_SERVER environment variable (JSON):
//   name        'A' | 'B'                      origin written into every notification
//   store       null | { idFormat, unknownCursor } (see event-store.mjs) | 'sdk-example' (the SDK's own store)
//   hydrate     accept requests for sessions this process never saw, by creating a transport that claims the
//               session id: the multi-node pattern that makes resumes land on a process without the log
//   ticker      { everyMs, count }: live notifications sent on hydrated sessions
//   keepAliveMs SSE keep-alive comment interval
// Prints `LISTENING <port>` on stdout once it accepts connections.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { z } from 'zod';
import { LabEventStore } from './event-store.mjs';

const config = { name: 'A', store: { idFormat: 'sdk' }, hydrate: false, keepAliveMs: 15000, ...JSON.parse(process.env.LAB_SERVER ?? '{}') };
const sessions = new Map();

function makeStore() {
  if (!config.store) return undefined;
  if (config.store === 'sdk-example') return new InMemoryEventStore();
  return new LabEventStore(config.store);
}

async function createSession(claimedSessionId) {
  const session = { seq: 0, transport: undefined, server: undefined };
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => claimedSessionId ?? randomUUID(),
    eventStore: makeStore(),
    keepAliveMs: config.keepAliveMs,
    onsessioninitialized: id => sessions.set(id, session),
  });
  const server = new McpServer({ name: `fork-lab-${config.name}`, version: '1.0.0' }, { capabilities: { logging: {} } });
  const notify = (extra, data) =>
    (extra ? extra.sendNotification.bind(extra) : server.server.notification.bind(server.server))({
      method: 'notifications/message',
      params: { level: 'info', logger: config.name, data: { origin: config.name, seq: ++session.seq, ...data } },
    });
  server.registerTool('emit', { inputSchema: { count: z.number().int() } }, async ({ count }) => {
    // Standalone-stream notifications: stored even while the client is disconnected.
    for (let i = 0; i < count; i++) await notify(undefined, {});
    return { content: [{ type: 'text', text: `emitted ${count}` }] };
  });
  server.registerTool(
    'slow_task',
    { inputSchema: { count: z.number().int(), intervalMs: z.number().int() } },
    async ({ count, intervalMs }, extra) => {
      // Notifications on the request's own POST stream.
      for (let i = 0; i < count; i++) {
        await notify(extra, { stream: 'task' });
        await new Promise(r => setTimeout(r, intervalMs));
      }
      return { content: [{ type: 'text', text: 'task done' }] };
    },
  );
  session.transport = transport;
  session.server = server;
  await server.connect(transport);
  if (claimedSessionId) {
    // Hydration: claim an existing session id without its event log.
    const core = transport._webStandardTransport ?? transport;
    core.sessionId = claimedSessionId;
    core._initialized = true;
    sessions.set(claimedSessionId, session);
    if (config.ticker) startTicker(session, notify);
  }
  return session;
}

function startTicker(session, notify) {
  let sent = 0;
  const timer = setInterval(() => {
    if (sent++ >= config.ticker.count) return clearInterval(timer);
    notify(undefined, { live: true }).catch(() => {});
  }, config.ticker.everyMs);
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

const httpServer = createServer(async (req, res) => {
  try {
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const sessionId = req.headers['mcp-session-id'];
    let session = sessionId ? sessions.get(sessionId) : undefined;
    if (!session && !sessionId && req.method === 'POST') session = await createSession();
    else if (!session && sessionId && config.hydrate) session = await createSession(sessionId);
    if (!session) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return;
    }
    await session.transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

httpServer.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${httpServer.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
