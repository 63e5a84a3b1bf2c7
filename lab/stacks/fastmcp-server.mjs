/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real fastmcp server (FastMCP over httpStream: @modelcontextprotocol/sdk 1.x for the MCP server, mcp-proxy and
// @modelcontextprotocol/server 2.x for the HTTP transport and the event store), loaded from the app folder in
// STACK_APP. Run it with `--import forkwatch/register`.
// STACK_SERVER (JSON): { port, moduleSystem: 'esm' | 'cjs' (how the app loads the package), eventStore: 'default' |
// 'none' }. Announces `STACK LISTENING <port>` on stderr.
import { appLoader } from './load-app.mjs';

const config = JSON.parse(process.env.STACK_SERVER ?? '{}');
const load = appLoader(process.env.STACK_APP, config.moduleSystem);

const { FastMCP } = await load('fastmcp');
const { z } = await load('zod');

let seq = 0;
const server = new FastMCP({ name: 'stack-fastmcp', version: '1.0.0' });
server.addTool({
  name: 'emit',
  parameters: z.object({ count: z.number().int() }),
  // fastmcp's log goes through the SDK 1.x Server's sendLoggingMessage: to the session's standalone GET stream.
  execute: async ({ count }, { log }) => {
    for (let i = 0; i < count; i++) log.info('tick', { seq: ++seq });
    return `emitted ${count}`;
  },
});
await server.start({
  transportType: 'httpStream',
  httpStream: { host: '127.0.0.1', port: config.port, ...(config.eventStore === 'none' ? { eventStore: false } : {}) },
});
process.stderr.write(`STACK LISTENING ${config.port}\n`);
process.once('SIGTERM', () => server.stop().finally(() => process.exit(0)));
