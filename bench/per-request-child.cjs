/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One process of the per-request benchmark (per-request.mjs): a telemetry variant (bare NodeSDK, or NodeSDK +
// forkwatch) set up first, then the real 2.x packages at protocol 2026-07-28 on loopback HTTP in this process: a
// createMcpHandler endpoint served by @modelcontextprotocol/node, and the 2.x client (pinned to 2026-07-28) calling
// a tool `count` times, with one event-bus publish per call. Both halves of forkwatch's new patches run: the server's
// (transport, handler, bus) and the client's wire observer on fetch. Prints JSON: CPU microseconds per call.
const [variant, forkwatchEntry, countArg, warmupArg] = process.argv.slice(2);
const { setupVariant } = require('./variants.cjs');
const telemetry = setupVariant(variant, { forkwatchEntry });
const { createServer } = require('node:http');
const { McpServer, createMcpHandler, PerRequestHTTPServerTransport } = require('@modelcontextprotocol/server');
const { toNodeHandler } = require('@modelcontextprotocol/node');
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { z } = require('zod');

if (variant.includes('forkwatch') && PerRequestHTTPServerTransport.prototype.handleMessage.__wrapped !== true) {
  throw new Error(`${variant}: the per-request transport is not patched by forkwatch`);
}

const factory = () => {
  const server = new McpServer({ name: 'bench', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.registerTool('add', { inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  return server;
};

(async () => {
  const handler = createMcpHandler(factory, { legacy: 'reject' });
  const http = createServer(toNodeHandler(handler));
  await new Promise(resolve => http.listen(0, '127.0.0.1', resolve));
  const url = new URL(`http://127.0.0.1:${http.address().port}/mcp`);
  const client = new Client(
    { name: 'bench', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  const count = Number(countArg);
  const calls = async n => {
    for (let i = 0; i < n; i++) {
      await client.callTool({ name: 'add', arguments: { a: i, b: 1 } });
      handler.notify.toolsChanged();
    }
  };
  await calls(Number(warmupArg));
  const cpu = process.cpuUsage();
  await calls(count);
  const used = process.cpuUsage(cpu);
  process.stdout.write(
    `${JSON.stringify({ variant, calls: count, cpuUsPerCall: (used.user + used.system) / count })}\n`,
  );
  await client.close();
  await handler.close();
  http.close();
  await telemetry.shutdown();
  process.exit(0);
})().catch(error => {
  console.error(error);
  process.exit(1);
});
