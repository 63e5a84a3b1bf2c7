/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The benchmark's MCP server: a real @modelcontextprotocol/sdk server (Node streamable HTTP transport, the SDK's own
// InMemoryEventStore so every SSE frame carries an SDK-format id) in its own process, without any telemetry.
//
// Tool `stream {count, bytes}` sends `count` logging notifications on the tool call's own POST SSE stream, as fast as
// the transport takes them, then answers. A session ends with the client's DELETE, which frees its event log.
// Prints `LISTENING <port>` once it accepts connections.
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { InMemoryEventStore } = require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const { z } = require('zod');

const sessions = new Map();

async function createSession() {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: new InMemoryEventStore(),
    onsessioninitialized: id => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  const server = new McpServer({ name: 'forkwatch-bench', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool(
    'stream',
    { inputSchema: { count: z.number().int(), bytes: z.number().int() } },
    async ({ count, bytes }, extra) => {
      const text = 'x'.repeat(bytes);
      for (let seq = 1; seq <= count; seq++) {
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', logger: 'bench', data: { seq, text } },
        });
      }
      return { content: [{ type: 'text', text: `streamed ${count}` }] };
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

httpServer.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${httpServer.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('disconnect', () => process.exit(0));
