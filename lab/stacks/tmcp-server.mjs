/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real tmcp server: tmcp's McpServer and its own HTTP transport (@tmcp/transport-http's HttpTransport, ESM only,
// no @modelcontextprotocol package), its `respond(Request)` served by @hono/node-server. Loaded from the app folder in
// STACK_APP; run it with `--import forkwatch/register`.
// STACK_SERVER (JSON): { port }. Announces `STACK LISTENING <port>` on stderr.
import { appLoader } from './load-app.mjs';

const config = JSON.parse(process.env.STACK_SERVER ?? '{}');
const load = appLoader(process.env.STACK_APP, 'esm');

const { McpServer } = await load('tmcp');
const { HttpTransport } = await load('@tmcp/transport-http');
const { ZodJsonSchemaAdapter } = await load('@tmcp/adapter-zod');
const { z } = await load('zod');
const { serve } = await load('@hono/node-server');

let seq = 0;
const server = new McpServer(
  { name: 'stack-tmcp', version: '1.0.0', description: 'forkwatch stack test' },
  { adapter: new ZodJsonSchemaAdapter(), capabilities: { tools: { listChanged: true }, logging: {} } },
);
server.tool(
  { name: 'emit', description: 'sends `count` log messages', schema: z.object({ count: z.number().int() }) },
  async ({ count }) => {
    for (let i = 0; i < count; i++) server.log('info', { seq: ++seq });
    return { content: [{ type: 'text', text: `emitted ${count}` }] };
  },
);
// tmcp writes a broadcast to every session's open GET stream, and to nobody else: the standalone stream's notifications.
server.tool(
  {
    name: 'broadcast',
    description: 'broadcasts `count` notifications/tools/list_changed to every open GET stream',
    schema: z.object({ count: z.number().int() }),
  },
  async ({ count }) => {
    for (let i = 0; i < count; i++) server.changed('tools');
    return { content: [{ type: 'text', text: `broadcast ${count}` }] };
  },
);
const transport = new HttpTransport(server, { path: '/mcp' });

const http = serve(
  {
    fetch: async request => (await transport.respond(request)) ?? new Response('not found', { status: 404 }),
    hostname: '127.0.0.1',
    port: config.port,
  },
  () => process.stderr.write(`STACK LISTENING ${config.port}\n`),
);
process.once('SIGTERM', () => http.close(() => process.exit(0)));
