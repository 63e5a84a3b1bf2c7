/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The legacy SSE client after an auth retry: SSEClientTransport calls `_startOrAuth` again once its auth provider
 * has refreshed the token (a real SDK SSEServerTransport that answers 401 to the first GET, and a token endpoint).
 * forkwatch must observe the new EventSource through one fetch wrapper, not one per start: a nested wrapper would
 * count every later request again, so one reconnect would show up as two resumes.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import * as sseClient from '@modelcontextprotocol/sdk/client/sse.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { ForkwatchInstrumentation } from '../../src';
import { RESUME_OUTCOMES } from '../../src/core/verdict';
import { METRICS } from '../../src/shared/names';
import { sample } from '../support/lab';

/** A resume with no verdict is concluded `inconclusive` after this long: a nested wrapper's stray attempt would be. */
const VERDICT_TIMEOUT_MS = 300;
let exporter: PrometheusExporter;
let meterProvider: MeterProvider;
let instrumentation: ForkwatchInstrumentation;
const closers: (() => Promise<unknown> | unknown)[] = [];

async function waitFor(what: string, fn: () => boolean | Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise(r => setTimeout(r, 20));
  }
}

async function scrape() {
  const { resourceMetrics } = await exporter.collect();
  return new PrometheusSerializer().serialize(resourceMetrics);
}

function resumes(text: string): number {
  return RESUME_OUTCOMES.map(
    outcome => sample(text, METRICS.clientResumes.prometheusName, { transport: 'sse', outcome }) ?? 0,
  ).reduce((a, b) => a + b, 0);
}

/** A 2024-11-05 server behind bearer auth: `Bearer good` gets in; the token endpoint trades any refresh token for it. */
async function startAuthServer() {
  const transports = new Map<string, SSEServerTransport>();
  const streams: ServerResponse[] = [];
  const log: string[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, 'http://x');
    if (req.method === 'POST' && url.pathname === '/token') {
      log.push('token');
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ access_token: 'good', token_type: 'Bearer', refresh_token: 'r2' }));
    }
    if (url.pathname.startsWith('/.well-known/')) return void res.writeHead(404).end();
    if (req.headers.authorization !== 'Bearer good') {
      log.push(`${req.method} 401`);
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' });
      return void res.end();
    }
    if (req.method === 'GET') {
      log.push('GET 200');
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      streams.push(res);
      await new McpServer({ name: 'legacy-auth', version: '1.0.0' }).connect(transport);
      res.write('retry: 100\n\n');
      return;
    }
    const transport = transports.get(url.searchParams.get('sessionId') ?? '');
    if (!transport) return void res.writeHead(404).end();
    await transport.handlePostMessage(req, res);
  });
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r));
  closers.push(() => {
    server.closeAllConnections();
    return new Promise(r => server.close(r));
  });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, streams, log };
}

/** Starts with an expired access token and a refresh token, as an app that resumes a saved login does. */
function authProvider() {
  let tokens = { access_token: 'expired', token_type: 'Bearer', refresh_token: 'r1' };
  return {
    get redirectUrl() {
      return 'http://127.0.0.1/callback';
    },
    get clientMetadata() {
      return { redirect_uris: ['http://127.0.0.1/callback'], client_name: 'forkwatch-test' };
    },
    clientInformation: () => ({ client_id: 'forkwatch-test' }),
    tokens: () => tokens,
    saveTokens: (next: typeof tokens) => {
      tokens = next;
    },
    redirectToAuthorization: () => {
      throw new Error('no interactive login in this test');
    },
    saveCodeVerifier: () => undefined,
    codeVerifier: () => 'verifier',
  };
}

beforeEach(() => {
  exporter = new PrometheusExporter({ preventServerStart: true });
  meterProvider = new MeterProvider({ readers: [exporter] });
  instrumentation = new ForkwatchInstrumentation({ verdictTimeoutMs: VERDICT_TIMEOUT_MS });
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.manuallyInstrument(sseClient);
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  instrumentation.disable();
  await meterProvider.shutdown();
});

test('after a 401 and a token refresh, one reconnect counts as one resume (the fetch wrappers do not nest)', async () => {
  const server = await startAuthServer();
  const transport = new sseClient.SSEClientTransport(new URL(`${server.url}/sse`), {
    authProvider: authProvider() as never,
  });
  const client = new Client({ name: 'legacy-auth-app', version: '1.0.0' });
  client.onerror = () => {};
  await client.connect(transport);
  closers.push(() => client.close());
  await client.ping();
  // The auth retry really happened: 401, token refresh, then the authorised stream.
  expect(server.log.slice(0, 3)).toEqual(['GET 401', 'token', 'GET 200']);
  expect(resumes(await scrape())).toBe(0);

  // The stream drops; the EventSource reconnects on its own into a new server session.
  server.streams[0]!.destroy();
  await waitFor('the reconnect', () => server.log.filter(l => l === 'GET 200').length >= 2);
  const reconnectedAt = Date.now();
  await waitFor('the verdict', async () => resumes(await scrape()) > 0);
  // A nested wrapper would also have opened an attempt for the reconnect on the first start's state, which nothing
  // but its timer concludes: let that timer run out (twice over) before counting, with the client still working.
  await waitFor('the stray attempt timer', () => Date.now() - reconnectedAt > 2 * VERDICT_TIMEOUT_MS);
  await client.ping();
  const text = await scrape();
  expect(resumes(text)).toBe(1);
  expect(sample(text, METRICS.clientResumes.prometheusName, { transport: 'sse', outcome: 'forked' })).toBe(1);
});
