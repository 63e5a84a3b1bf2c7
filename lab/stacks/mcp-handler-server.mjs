/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real mcp-handler (Vercel) route handler, outside Next.js: its `(Request) => Response` function behind a plain
// node:http server. mcp-handler 2.x serves 2025-era traffic statelessly through @modelcontextprotocol/server 2.x
// (`legacy: 'stateless'`): no sessions, no event store, GET answered 405. Run it with `--import forkwatch/register`.
// @vercel/mcp-adapter 1.0 re-exports mcp-handler 1.x, stateless on @modelcontextprotocol/sdk 1.x the same way.
// STACK_SERVER (JSON): { port, moduleSystem: 'esm' | 'cjs', package: 'mcp-handler' (default) | '@vercel/mcp-adapter' }.
// Announces `STACK LISTENING <port>` on stderr.
import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { appLoader } from './load-app.mjs';

const config = JSON.parse(process.env.STACK_SERVER ?? '{}');
const load = appLoader(process.env.STACK_APP, config.moduleSystem);
const { createMcpHandler } = await load(config.package ?? 'mcp-handler');

let seq = 0;
const handler = createMcpHandler(
  server => {
    // The request context comes last: 2.x passes (args, ctx) with ctx.mcpReq.notify, 1.x (extra) with sendNotification.
    server.registerTool('emit', { description: 'sends one log message' }, async (...params) => {
      const ctx = params.at(-1);
      const notify = ctx?.mcpReq?.notify ?? ctx?.sendNotification;
      await notify?.({ method: 'notifications/message', params: { level: 'info', data: { seq: ++seq } } });
      return { content: [{ type: 'text', text: 'emitted' }] };
    });
  },
  // SDK 1.x sends notifications/message only when the server declares logging.
  { serverInfo: { name: 'stack-mcp-handler', version: '1.0.0' }, capabilities: { logging: {} }, telemetry: false },
);

const http = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
  const request = new Request(`http://127.0.0.1:${config.port}${req.url}`, {
    method: req.method,
    headers: Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map(x => [k, x]) : [[k, v]])),
    ...(body && req.method !== 'GET' ? { body } : {}),
  });
  const response = await handler(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body) Readable.fromWeb(response.body).pipe(res);
  else res.end();
});
http.listen(config.port, '127.0.0.1', () => process.stderr.write(`STACK LISTENING ${config.port}\n`));
