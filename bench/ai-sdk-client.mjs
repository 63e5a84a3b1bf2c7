/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One run of the @ai-sdk/mcp benchmark, in its own process: the variant's telemetry first ('bare': none; 'forkwatch':
// tracer and meter providers with ForkwatchInstrumentation, whose fetch observer reads the GET stream), then the real
// @ai-sdk/mcp client from its app folder. Warms up with BENCH.warmup notifications on the standalone GET stream, then
// times BENCH.count of them (wall and CPU time of this process, from the tool call to the last one delivered).
// Prints one JSON line.
//
// 'providers': the same with observeFetch off.
// BENCH (JSON env): { variant, url, count, warmup, bytes, forkwatchEntry, appFolder }
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(process.env.BENCH);
const require = createRequire(import.meta.url);
let instrumentation;
if (config.variant === 'forkwatch' || config.variant === 'providers') {
  const { metrics } = require('@opentelemetry/api');
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
  const { InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const {
    MeterProvider,
    PeriodicExportingMetricReader,
    InMemoryMetricExporter,
    AggregationTemporality,
  } = require('@opentelemetry/sdk-metrics');
  const { registerInstrumentations } = require('@opentelemetry/instrumentation');
  const { ForkwatchInstrumentation } = require(config.forkwatchEntry);
  const tracerProvider = new NodeTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
  });
  tracerProvider.register();
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);
  // `providers`: the same set-up with the fetch observer off, so forkwatch / providers is the observer's own cost.
  instrumentation = new ForkwatchInstrumentation({ observeFetch: config.variant === 'forkwatch' });
  registerInstrumentations({ instrumentations: [instrumentation], tracerProvider, meterProvider });
}
const observed = globalThis.fetch[Symbol.for('forkwatch.fetch-observer')] === true;
if (observed !== (config.variant === 'forkwatch'))
  throw new Error(`variant ${config.variant}: fetch observed = ${observed}`);

const app = createRequire(join(config.appFolder, 'resolve-from.js'));
const { createMCPClient } = await import(pathToFileURL(app.resolve('@ai-sdk/mcp')).href);
const client = await createMCPClient({ transport: { type: 'http', url: config.url }, onUncaughtError: () => {} });
let received = 0;
let waiting;
const deliver = client.transport.onmessage;
client.transport.onmessage = message => {
  if (message?.method === 'notifications/message' && ++received === waiting?.count) waiting.resolve();
  return deliver(message);
};

async function stream(count) {
  received = 0;
  const all = new Promise(resolve => (waiting = { count, resolve }));
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await client.callTool({ name: 'stream', arguments: { count, bytes: config.bytes } });
  await all;
  const { user, system } = process.cpuUsage(cpu);
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, cpuMs: (user + system) / 1000 };
}

// The standalone GET stream opens after initialize: the warm-up's first notifications wait for it.
for (let i = 0; i < 100 && !client.transport.inboundSseConnection; i++) await new Promise(r => setTimeout(r, 20));
await stream(config.warmup);
const { ms, cpuMs } = await stream(config.count);
process.stdout.write(`${JSON.stringify({ variant: config.variant, count: config.count, ms, cpuMs })}\n`);
await client.close();
process.exit(0);
