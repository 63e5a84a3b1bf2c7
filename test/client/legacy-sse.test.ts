/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The legacy HTTP+SSE transport (2024-11-05): the real SDK SSEServerTransport and SSEClientTransport on
 * 127.0.0.1, through the fork lab's proxy, which really drops the GET stream.
 */
import { type ServerResponse, createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import * as sseClient from '@modelcontextprotocol/sdk/client/sse.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { ForkwatchInstrumentation } from '../../src';
import { METRICS } from '../../src/shared/names';
// @ts-expect-error: plain ESM module without types
import { startProxy } from '../../lab/proxy.mjs';
import { sample } from '../support/lab';
import { notification } from '../support/scripted-mcp-server';

const spans = new InMemorySpanExporter();
const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
let exporter: PrometheusExporter;
let meterProvider: MeterProvider;
let instrumentation: ForkwatchInstrumentation;
const closers: (() => Promise<unknown> | unknown)[] = [];
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

async function waitFor(what: string, fn: () => boolean, ms = 6000) {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function scrape() {
  const { resourceMetrics } = await exporter.collect();
  return new PrometheusSerializer().serialize(resourceMetrics);
}

/** A 2024-11-05 server: a new session per GET, as the SDK's SSEServerTransport does. `retry` speeds the test. */
async function startLegacyServer(extra?: (res: ServerResponse) => void) {
  const transports = new Map<string, SSEServerTransport>();
  const server = createServer(async (req, res) => {
    if (req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      transports.set(transport.sessionId, transport);
      await new McpServer({ name: 'legacy', version: '1.0.0' }).connect(transport);
      res.write('retry: 100\n\n');
      extra?.(res);
      return;
    }
    const sessionId = new URL(req.url!, 'http://x').searchParams.get('sessionId')!;
    const transport = transports.get(sessionId);
    if (!transport) return void res.writeHead(404).end();
    await transport.handlePostMessage(req, res);
  });
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r));
  closers.push(() => {
    server.closeAllConnections();
    return new Promise(r => server.close(r));
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeEach(() => {
  spans.reset();
  exporter = new PrometheusExporter({ preventServerStart: true });
  meterProvider = new MeterProvider({ readers: [exporter] });
  instrumentation = new ForkwatchInstrumentation({ verdictTimeoutMs: 2000 });
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.manuallyInstrument(sseClient);
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  instrumentation.disable();
  await meterProvider.shutdown();
});

/** The lab proxy (lab/proxy.mjs, untyped): what this file reads of it. */
interface LabProxy {
  url: string;
  log: { method: string; lastEventId?: string }[];
  close(): Promise<void>;
}

async function connectThroughProxy(upstream: string) {
  const proxy: LabProxy = await startProxy({ A: upstream, B: upstream });
  closers.push(() => proxy.close());
  const transport = new sseClient.SSEClientTransport(new URL(`${proxy.url}/sse`));
  const client = new Client({ name: 'legacy-app', version: '1.0.0' });
  client.onerror = () => {};
  // What the app received: an event the app got was seen (and its id held) by forkwatch first.
  const notifications: unknown[] = [];
  client.fallbackNotificationHandler = async notification => void notifications.push(notification);
  await client.connect(transport);
  closers.push(() => client.close());
  return { proxy, client, notifications };
}

test('an EventSource reconnect lands in a new server session: forked, stream_changed', async () => {
  const { proxy, client } = await connectThroughProxy(await startLegacyServer());
  await client.ping();
  await fetch(`${proxy.url}/__lab/cut`, { method: 'POST', body: JSON.stringify({ midFrame: false }) });
  await waitFor('the reconnect GET', () => proxy.log.filter(e => e.method === 'GET').length >= 2);
  await waitFor('the verdict', () => spans.getFinishedSpans().length === 1);
  const text = await scrape();
  expect(sample(text, METRICS.clientForks.prometheusName, { transport: 'sse', reason: 'stream_changed' })).toBe(1);
  expect(sample(text, METRICS.clientResumes.prometheusName, { transport: 'sse', outcome: 'forked' })).toBe(1);
  expect(spans.getFinishedSpans()[0]!.attributes['forkwatch.transport']).toBe('sse');
});

test('a held event id is dropped by the SDK on reconnect: forked, cursor_dropped', async () => {
  const upstream = await startLegacyServer(res => res.write(`id: 41\ndata: ${notification(1)}\n\n`));
  const { proxy, notifications } = await connectThroughProxy(upstream);
  await waitFor('the event with id 41', () => notifications.length >= 1);
  await fetch(`${proxy.url}/__lab/cut`, { method: 'POST', body: JSON.stringify({ midFrame: false }) });
  await waitFor('the reconnect GET', () => proxy.log.filter(e => e.method === 'GET').length >= 2);
  await waitFor('the verdict', () => spans.getFinishedSpans().length >= 1);
  const reconnect = proxy.log.filter(e => e.method === 'GET')[1]!;
  expect(reconnect.lastEventId).toBeUndefined(); // what reached the server
  const text = await scrape();
  expect(sample(text, METRICS.clientForks.prometheusName, { transport: 'sse', reason: 'cursor_dropped' })).toBe(1);
});
