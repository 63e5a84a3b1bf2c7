/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The short-sessions bench's MCP server: an SDK 1.32.2 `McpServer` per session on the Node
// `StreamableHTTPServerTransport` with the SDK's `InMemoryEventStore`, as an application writes one; a session ends
// with the client's DELETE. Whatever telemetry it has comes from the command line (`--require nodesdk.cjs`,
// `--import forkwatch/register`), never from this file.
//
// Tool `notify {count}` sends `count` notifications/message on the tool call's own POST SSE stream, then answers.
// `GET /cpu` (plain HTTP, no MCP; `?gc=1` runs a full GC first, `&idle=1` switches forkwatch's work off first:
// outside-in/idle.cjs) answers this process's CPU time
// (process.cpuUsage(), µs), its GC pauses (µs, outside-in/gc-pauses.cjs) and the number of sessions open, so the bench reads the server's CPU from inside it.
// Prints `LISTENING <port> <patched|bare> <where forkwatch was loaded from or ->` once it accepts connections.
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { InMemoryEventStore } = require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const { z } = require('zod');
const { gcPausedUs } = require('../outside-in/gc-pauses.cjs');
const { cpuReading } = require('../outside-in/threads.cjs');

const sessions = new Map();
const TEXT = 'x'.repeat(64);

async function createSession() {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: new InMemoryEventStore(),
    onsessioninitialized: id => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  const server = new McpServer({ name: 'short-sessions', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('notify', { inputSchema: { count: z.number().int() } }, async ({ count }, extra) => {
    for (let seq = 1; seq <= count; seq++) {
      await extra.sendNotification({
        method: 'notifications/message',
        params: { level: 'info', data: { seq, text: TEXT } },
      });
    }
    return { content: [{ type: 'text', text: String(count) }] };
  });
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
    if (req.url?.startsWith('/cpu')) {
      if (req.url.includes('idle=1')) require('../outside-in/idle.cjs').switchOff();
      if (req.url.includes('gc=1')) globalThis.gc?.();
      const { cpuUs, threads } = cpuReading();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ cpuUs, threads, gcUs: gcPausedUs(), open: sessions.size }));
      return;
    }
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
// A client starved of CPU on a loaded machine may reuse a kept-alive socket just as Node closes it: the same for
// every variant.
httpServer.keepAliveTimeout = 120_000;
httpServer.headersTimeout = 130_000;

// The bench checks that forkwatch really patched this process (and that the bare ones are bare).
const {
  WebStandardStreamableHTTPServerTransport,
} = require('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const patched = WebStandardStreamableHTTPServerTransport.prototype.handleGetRequest.__wrapped === true;

httpServer.listen(0, '127.0.0.1', () => {
  const from = Object.keys(require.cache).find(k => k.endsWith('/forkwatch/build/src/register.js')) ?? '-';
  process.stdout.write(`LISTENING ${httpServer.address().port} ${patched ? 'patched' : 'bare'} ${from}\n`);
});
process.on('SIGTERM', () => process.exit(0));
