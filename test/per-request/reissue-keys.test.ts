/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The re-issue window holds a key per broken exchange, built from what the peer sent (its tool name, resource URI):
 * bounded in count by `perRequest.maxTracked`, and in bytes by the key's digest. A real 2026-07-28 server
 * (createMcpHandler over node:http, accepting the 1 MB Mcp-Name header such a request needs) gets calls with
 * 999,000-character tool names and resource URIs, each cut by its client while the handler runs: the window keeps a
 * few dozen characters per call, and re-issues are still found, of the huge names and of normal ones.
 */
import { type Server as HttpServer, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { perRequestServerOf } from '../../src/server/stacks/sdk-per-request/observer';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { MODERN, serverSdk, until, useTestResources } from './support';

const t = useTestResources();
const nodeSdk = require('@modelcontextprotocol/node');

/** A server whose tools/call takes any tool name (as a proxy's does) and whose resource template takes any URI. */
async function startServer() {
  const started: string[] = [];
  const slow = async (what: string, ms: number) => {
    started.push(what);
    await new Promise(resolve => setTimeout(resolve, ms));
  };
  const handler = serverSdk.createMcpHandler(() => {
    const mcp = new serverSdk.McpServer(
      { name: 'reissue-keys', version: '1.0.0' },
      { capabilities: { tools: {}, resources: {} } },
    );
    mcp.registerResource(
      'files',
      new serverSdk.ResourceTemplate('file:///{+path}', { list: undefined }),
      {},
      async (uri: URL, _vars: unknown, ctx: { mcpReq: { signal: AbortSignal } }) => {
        await slow('read', Number(ctx.mcpReq.signal.aborted) + 150);
        return { contents: [{ uri: uri.href.slice(0, 40), text: 'content' }] };
      },
    );
    mcp.server.setRequestHandler('tools/call', async (request: { params: { name: string } }) => {
      await slow('call', 150);
      return { content: [{ type: 'text', text: `called ${request.params.name.slice(0, 20)}` }] };
    });
    return mcp;
  });
  const node = nodeSdk.toNodeHandler(handler);
  const http: HttpServer = createServer({ maxHeaderSize: 4 * 1024 * 1024 }, (req, res) => void node(req, res));
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    started,
    async close() {
      await handler.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>(resolve => http.close(() => resolve()));
    },
  };
}

type Target = { method: 'tools/call'; name: string } | { method: 'resources/read'; uri: string };

let nextId = 1;
/** A 2026-07-28 POST of `target`; `cut`: the client aborts it once the handler runs (a broken exchange). */
async function send(server: Awaited<ReturnType<typeof startServer>>, target: Target, cut: boolean) {
  const { method, ...params } = target;
  const name = 'name' in target ? target.name : target.uri;
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: nextId++,
    method,
    params: {
      ...params,
      ...(method === 'tools/call' ? { arguments: {} } : {}),
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
  const abort = new AbortController();
  const startedBefore = server.started.length;
  const response = fetch(server.url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-method': method,
      'mcp-protocol-version': MODERN,
      'mcp-name': name,
    },
    body,
  }).then(async r => ({ status: r.status, text: await r.text() }));
  if (!cut) return response;
  await until(() => server.started.length > startedBefore, 'the handler to start');
  abort.abort();
  return response.catch(() => 'cut');
}

const huge = (n: number) => `${String(n).padStart(6, '0')}${'x'.repeat(999_000 - 6)}`;

test('999,000-character tool names and URIs: the re-issue window keeps a few dozen characters each, and still finds re-issues', async () => {
  t.fw = setupForkwatch({}, serverSdk);
  const server = await startServer();
  t.cleanups.push(() => server.close());
  const reissues = async (idempotency: string) =>
    sampleOne(await t.fw!.metrics(), METRICS.serverProbableReissues.prometheusName, { idempotency }) ?? 0;
  // The observer's private re-issue window, by correlation key: what it keeps of each broken exchange.
  type WithReissues = { reissues: { window: { entries: Map<string, unknown> } } };
  const brokenKeys = () => [
    ...(perRequestServerOf(t.fw!.instrumentation) as unknown as WithReissues).reissues.window.entries.keys(),
  ];

  const CALLS = 6;
  for (let n = 0; n < CALLS; n++) {
    expect(await send(server, { method: 'tools/call', name: huge(n) }, true)).toBe('cut');
    expect(await send(server, { method: 'resources/read', uri: `file:///${huge(n)}` }, true)).toBe('cut');
  }
  await until(() => brokenKeys().length === 2 * CALLS, 'every cut exchange in the window');
  const keyChars = brokenKeys().reduce((sum, key) => sum + key.length, 0);
  process.stderr.write(`re-issue window: ${brokenKeys().length} keys, ${keyChars} characters\n`);
  expect(keyChars).toBeLessThan(2 * CALLS * 64);

  // A huge name re-issued is still found (its digest is the same), and so is a normal one.
  const answer = await send(server, { method: 'tools/call', name: huge(0) }, false);
  expect(answer).toMatchObject({ status: 200 });
  await until(async () => (await reissues('not_idempotent')) === 1, 'the huge re-issue');
  const inWindow = brokenKeys().length;
  expect(await send(server, { method: 'resources/read', uri: 'file:///etc/motd' }, true)).toBe('cut');
  // The server closes the exchange when it notices the cut; a client re-issues after that.
  await until(() => brokenKeys().length === inWindow + 1, 'the cut exchange in the window');
  expect(await send(server, { method: 'resources/read', uri: 'file:///etc/motd' }, false)).toMatchObject({
    status: 200,
  });
  await until(async () => (await reissues('not_a_tool')) === 1, 'the normal re-issue');
  // A different URI of the same length is no re-issue of the first.
  expect(await send(server, { method: 'resources/read', uri: `file:///${huge(99)}` }, false)).toMatchObject({
    status: 200,
  });
  await new Promise(resolve => setTimeout(resolve, 50));
  expect(await reissues('not_a_tool')).toBe(1);
});
