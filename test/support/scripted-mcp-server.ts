/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real HTTP server on 127.0.0.1 that answers the MCP handshake and then plays a script on each SSE GET, for
 * frame-level cases the SDK server never produces (id-less frames, huge ids, regressed sequences, abrupt cuts).
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';

export type GetScript = (res: ServerResponse, req: IncomingMessage) => void | Promise<void>;

export interface ScriptedServer {
  url: string;
  /** Headers of every GET, in order. */
  gets: IncomingMessage['headers'][];
  /** Scripts for the next GETs, consumed one per GET; a GET without a script stays open and silent. */
  scripts: GetScript[];
  close(): Promise<void>;
}

export const notification = (n: number) =>
  JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { n } } });

/** `id: <id>\ndata: <notification n>\n\n`, or without the id line when id is undefined. */
export const frame = (id: string | undefined, n: number) =>
  `${id !== undefined ? `id: ${id}\n` : ''}data: ${notification(n)}\n\n`;

export function openSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

export async function startScriptedServer(protocolVersion = '2025-11-25'): Promise<ScriptedServer> {
  const gets: IncomingMessage['headers'][] = [];
  const scripts: GetScript[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer(async (req, res) => {
    if (req.method === 'GET') {
      gets.push(req.headers);
      open.add(res);
      res.on('close', () => open.delete(res));
      const script = scripts.shift();
      if (script) await script(res, req);
      else openSse(res);
      return;
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = body ? JSON.parse(body) : {};
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-under-test' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: message.id,
          result: {
            protocolVersion,
            capabilities: { logging: {} },
            serverInfo: { name: 'scripted', version: '1.0.0' },
          },
        }),
      );
      return;
    }
    res.writeHead(202).end();
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    gets,
    scripts,
    async close() {
      for (const res of open) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise(resolve => server.close(resolve));
    },
  };
}
