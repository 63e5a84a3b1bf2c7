/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The outside-in bench's MCP server: an SDK 1.32.2 `McpServer` on the Node `StreamableHTTPServerTransport` with
// the SDK's `InMemoryEventStore`, as an application writes one. Whatever telemetry it has comes from the command
// line (`--require nodesdk.cjs`, `--import forkwatch/register`), never from this file.
//
// Tool `burst {count, kind}` sends `count` notifications/message, on the tool call's own POST SSE stream
// (kind 'request') or on the session's standalone GET stream (kind 'standalone'), and answers with this process's
// CPU time around the burst, in all and per thread group, with the readings it was taken from (threads.cjs). Prints
// `LISTENING <port>` once it accepts connections.
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { InMemoryEventStore } = require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const { z } = require('zod');
const { cpuReading, cpuSpent } = require('./threads.cjs');

const sessions = new Map();
const TEXT = 'x'.repeat(64);

/** Whether the session's standalone GET stream has a connection (the web-standard transport's own map, SDK 1.25+). */
const standaloneOpen = transport => {
  const inner = transport._webStandardTransport ?? transport;
  return inner._streamMapping?.get(inner._standaloneSseStreamId ?? '_GET_stream') !== undefined;
};

async function createSession() {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: new InMemoryEventStore(),
    onsessioninitialized: id => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  const server = new McpServer({ name: 'outside-in', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool(
    'burst',
    { inputSchema: { count: z.number().int(), kind: z.enum(['request', 'standalone']) } },
    async ({ count, kind }, extra) => {
      if (kind === 'standalone') {
        // The client opens its GET stream after initialize; a burst before it would only be stored.
        for (let i = 0; !standaloneOpen(transport); i++) {
          if (i > 500) throw new Error('the client never opened its standalone GET stream');
          await new Promise(r => setTimeout(r, 10));
        }
      }
      const start = cpuReading();
      const t0 = process.hrtime.bigint();
      for (let seq = 1; seq <= count; seq++) {
        const notification = { method: 'notifications/message', params: { level: 'info', data: { seq, text: TEXT } } };
        if (kind === 'request') await extra.sendNotification(notification);
        else await server.server.notification(notification);
      }
      const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
      const end = cpuReading();
      // The readings themselves too: the bench also takes the CPU between bursts (GC work that runs on after one).
      const measured = { ...cpuSpent(start, end), wallUs, start, end };
      return { content: [{ type: 'text', text: JSON.stringify(measured) }] };
    },
  );
  await server.connect(transport);
  return transport;
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
    let transport = sessionId ? sessions.get(sessionId) : undefined;
    if (!transport && !sessionId && req.method === 'POST') transport = await createSession();
    if (!transport) {
      res.writeHead(404).end();
      return;
    }
    await transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

// Node closes an idle kept-alive socket after 5 s; a client starved of CPU on a loaded machine may reuse it just
// then ("fetch failed"). The same for every variant.
httpServer.keepAliveTimeout = 120_000;
httpServer.headersTimeout = 130_000;

// The bench checks that forkwatch really patched this process (and that the bare ones are bare).
const {
  WebStandardStreamableHTTPServerTransport,
} = require('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const patched = WebStandardStreamableHTTPServerTransport.prototype.handleGetRequest.__wrapped === true;

httpServer.listen(0, '127.0.0.1', () => {
  // Where forkwatch was loaded from: the bench checks it is its own snapshot.
  const from = Object.keys(require.cache).find(k => k.endsWith('/forkwatch/build/src/register.js')) ?? '-';
  process.stdout.write(`LISTENING ${httpServer.address().port} ${patched ? 'patched' : 'bare'} ${from}\n`);
});
process.on('SIGTERM', () => process.exit(0));
