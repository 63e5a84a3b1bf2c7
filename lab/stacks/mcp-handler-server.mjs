/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real mcp-handler (Vercel) route handler, outside Next.js: its `(Request) => Response` function behind a plain
// node:http server. mcp-handler 2.x serves 2025-era traffic statelessly through @modelcontextprotocol/server 2.x
// (`legacy: 'stateless'`): no sessions, no event store, GET answered 405. Run it with `--import forkwatch/register`.
// STACK_SERVER (JSON): { port, moduleSystem: 'esm' | 'cjs' }. Announces `STACK LISTENING <port>` on stderr.
import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { appLoader } from './load-app.mjs';

const config = JSON.parse(process.env.STACK_SERVER ?? '{}');
const load = appLoader(process.env.STACK_APP, config.moduleSystem);
const { createMcpHandler } = await load('mcp-handler');

let seq = 0;
const handler = createMcpHandler(
  server => {
    server.registerTool('emit', { description: 'sends one log message' }, async (_args, ctx) => {
      await ctx?.mcpReq?.notify?.({ method: 'notifications/message', params: { level: 'info', data: { seq: ++seq } } });
      return { content: [{ type: 'text', text: 'emitted' }] };
    });
  },
  { serverInfo: { name: 'stack-mcp-handler', version: '1.0.0' }, telemetry: false },
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
