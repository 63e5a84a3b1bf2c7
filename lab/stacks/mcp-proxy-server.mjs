/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real mcp-proxy streamable HTTP server (startHTTPServer, on @modelcontextprotocol/server 2.x, with mcp-proxy's own
// event store), loaded from the app folder in STACK_APP. Run it with `--import forkwatch/register`.
// STACK_SERVER (JSON): { port, moduleSystem: 'esm' | 'cjs' (how the app loads the package), eventStore: 'default' |
// 'none', maxEvents? }. Announces `STACK LISTENING <port>` on stderr (stdout stays clean, as for any server
// forkwatch/register runs in).
import { appLoader } from './load-app.mjs';

const config = JSON.parse(process.env.STACK_SERVER ?? '{}');
const load = appLoader(process.env.STACK_APP, config.moduleSystem);

const { startHTTPServer } = await load('mcp-proxy');
const { McpServer } = await load('@modelcontextprotocol/server');
const { z } = await load('zod');

let seq = 0;
const server = await startHTTPServer({
  host: '127.0.0.1',
  port: config.port,
  ...(config.eventStore === 'none' ? { eventStore: false } : {}),
  ...(config.maxEvents ? { eventStoreMaxEvents: config.maxEvents } : {}),
  createServer: async () => {
    const mcp = new McpServer({ name: 'stack-mcp-proxy', version: '1.0.0' }, { capabilities: { logging: {} } });
    mcp.registerTool('emit', { inputSchema: z.object({ count: z.number().int() }) }, async ({ count }) => {
      // Not related to the request: these go to the session's standalone GET stream.
      for (let i = 0; i < count; i++) {
        await mcp.server.notification({
          method: 'notifications/message',
          params: { level: 'info', data: { seq: ++seq } },
        });
      }
      return { content: [{ type: 'text', text: `emitted ${count}` }] };
    });
    return mcp;
  },
});
process.stderr.write(`STACK LISTENING ${config.port}\n`);
process.once('SIGTERM', () => server.close().finally(() => process.exit(0)));
