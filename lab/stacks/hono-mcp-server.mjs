/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real @hono/mcp server: its own StreamableHTTPTransport (Hono context in, Response out; the SDK 1.x only for the
// McpServer and the types), one transport per session, served by Hono on @hono/node-server. Loaded from the app
// folder in STACK_APP; run it with `--import forkwatch/register`.
// STACK_SERVER (JSON): { port, eventStore: 'memory' | 'shared' | 'none' } ('memory': a MemoryEventStore per session,
// 'shared': one for every session), metricsRoute: serve forkwatch's metrics on GET /metrics. Announces
// `STACK LISTENING <port>` on stderr (port 0 or absent: the OS's choice).
import { appLoader } from './load-app.mjs';

const config = JSON.parse(process.env.STACK_SERVER ?? '{}');
const load = appLoader(process.env.STACK_APP, 'esm');

const { StreamableHTTPTransport, MemoryEventStore } = await load('@hono/mcp');
const { Hono } = await load('hono');
const { serve } = await load('@hono/node-server');
const { McpServer } = await import(
  new URL('node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js', `file://${process.env.STACK_APP}/`).href
);
const { z } = await load('zod');

let seq = 0;
const transports = new Map();
const sharedStore = config.eventStore === 'shared' ? new MemoryEventStore() : undefined;
const eventStore = () => (config.eventStore === 'none' ? {} : { eventStore: sharedStore ?? new MemoryEventStore() });

async function newSession() {
  const mcp = new McpServer({ name: 'stack-hono-mcp', version: '1.0.0' }, { capabilities: { logging: {} } });
  mcp.registerTool('emit', { inputSchema: { count: z.number().int() } }, async ({ count }) => {
    // No related request: to the session's standalone GET stream.
    for (let i = 0; i < count; i++) await mcp.server.sendLoggingMessage({ level: 'info', data: { seq: ++seq } });
    return { content: [{ type: 'text', text: `emitted ${count}` }] };
  });
  const transport = new StreamableHTTPTransport({
    sessionIdGenerator: () => crypto.randomUUID(),
    onsessioninitialized: id => transports.set(id, transport),
    ...eventStore(),
  });
  await mcp.connect(transport);
  return transport;
}

const app = new Hono();
app.all('/mcp', async c => {
  const id = c.req.header('mcp-session-id');
  if (id !== undefined && !transports.has(id)) return c.json({ error: 'unknown session' }, 404);
  const transport = id === undefined ? await newSession() : transports.get(id);
  return transport.handleRequest(c);
});
if (config.metricsRoute) {
  // forkwatch's families in a prom-client registry on the app's own port (run with OTEL_METRICS_EXPORTER=none):
  // one port, the OS's choice, for `forkwatch drill --server-metrics`.
  const { createRequire } = await import('node:module');
  const requireFromRepo = createRequire(new URL('../../package.json', import.meta.url));
  const { Registry } = requireFromRepo('prom-client');
  const { registerForkwatchMetrics } = requireFromRepo('./build/src/prom-client.js');
  const registry = new Registry();
  registerForkwatchMetrics(registry);
  app.get('/metrics', async c => c.text(await registry.metrics()));
}
const http = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: config.port ?? 0 }, info =>
  process.stderr.write(`STACK LISTENING ${info.port}\n`),
);
process.once('SIGTERM', () => http.close(() => process.exit(0)));
