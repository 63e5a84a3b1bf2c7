/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Issue 45.5: revived sessions only where a session exists. A stateless transport (`sessionIdGenerator: undefined`,
 * what mcp-handler and @vercel/mcp-adapter build per request) validates no session id, so a client that kept one from
 * a stateful deployment sends it on every request and is served: that is no revived session. The real SDK servers
 * (1.32.2 and 2.x web-standard transports) in this process, one transport per request as mcp-handler does, beside
 * the stateful hydration that is a revival.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import type { Forkwatch } from '../support/forkwatch';
import { sample } from '../support/scrape';
import { SERVERS, type ServerLine, setupLab } from './support';

const revived = METRICS.serverRevivedSessions.prometheusName;
const KEPT_ID = 'kept-from-a-stateful-deployment';

let fw: Forkwatch | undefined;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await fw?.teardown();
  fw = undefined;
});

// biome-ignore lint/suspicious/noExplicitAny: the SDK classes are loaded per line
type AnyClass = new (...args: any[]) => any;

/**
 * A node:http server on port 0 that builds a transport per request (stateless: no generator; `hydrate`: a
 * generator returning the request's id and the transport marked initialized, the SDK's multi-node pattern).
 */
async function startServer(line: ServerLine, mode: 'stateless' | 'hydrate') {
  const { McpServer, WebStandardStreamableHTTPServerTransport } = line.sdk as {
    McpServer: AnyClass;
    WebStandardStreamableHTTPServerTransport: AnyClass;
  };
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(key, value);
    const claimed = headers.get('mcp-session-id') ?? undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: mode === 'stateless' ? undefined : () => claimed ?? 'fresh',
      enableJsonResponse: true,
    });
    const server = new McpServer({ name: 'stateless-lab', version: '1.0.0' });
    server.registerTool('emit', {}, async () => ({ content: [{ type: 'text', text: 'emitted' }] }));
    await server.connect(transport);
    if (mode === 'hydrate' && claimed) {
      transport.sessionId = claimed;
      transport._initialized = true;
    }
    const response: Response = await transport.handleRequest(
      new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }),
    );
    res.writeHead(response.status, Object.fromEntries(response.headers as unknown as Iterable<[string, string]>));
    res.end(Buffer.from(await response.arrayBuffer()));
    // mcp-handler closes its per-request transport once the response is out.
    await transport.close();
  });
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise(resolve => http.close(resolve)));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

/** A JSON-RPC POST carrying the session id the client kept. */
async function post(url: string, id: number, method: string, params: object) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      'mcp-session-id': KEPT_ID,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  return { status: res.status, body: await res.json() };
}

async function fiveRequests(url: string) {
  const answers = [];
  for (let i = 1; i <= 5; i++) answers.push(await post(url, i, 'tools/call', { name: 'emit', arguments: {} }));
  return answers;
}

describe.each(SERVERS)('$label', line => {
  test('stateless (sessionIdGenerator: undefined) with a kept session id: 5 requests served, 0 revived sessions', async () => {
    fw = setupLab();
    const url = await startServer(line, 'stateless');
    const answers = await fiveRequests(url);
    expect(answers.map(a => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers[0]!.body).toMatchObject({ result: { content: [{ text: 'emitted' }] } });
    await fw.settle();
    const text = await fw.metrics();
    expect(sample(text, revived, { state: 'empty' })).toBe(0);
    expect(sample(text, revived, { state: 'restored' })).toBe(0);
  });

  test('the stateful control: a transport hydrated under the kept id is a revived session (empty)', async () => {
    fw = setupLab();
    const url = await startServer(line, 'hydrate');
    const answers = await fiveRequests(url);
    expect(answers.map(a => a.status)).toEqual([200, 200, 200, 200, 200]);
    await fw.settle();
    // One transport per request here, each a first request under an id it never held.
    expect(sample(await fw.metrics(), revived, { state: 'empty' })).toBe(5);
  });
});
