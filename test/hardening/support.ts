/**
 * Shared support of the hardening tests: forkwatch on private OpenTelemetry providers, a real SDK client that records
 * everything the application sees, lab server processes that the tests may kill, and checks that recorded data is
 * bounded and printable.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import * as streamableHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DiagLogLevel, diag } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ForkwatchInstrumentation } from '../../src/instrumentation';
import type { ForkwatchInstrumentationConfig } from '../../src/types';

export const root = join(__dirname, '../..');
export const { StreamableHTTPClientTransport } = streamableHttp;
export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

export async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, ms = 8000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Everything forkwatch's diagnostics said at warn level and above, for the whole test file. */
export const diagnostics: string[] = [];
diag.setLogger(
  {
    error: (...args: unknown[]) => diagnostics.push(`error: ${args.map(String).join(' ')}`),
    warn: (...args: unknown[]) => diagnostics.push(`warn: ${args.map(String).join(' ')}`),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  },
  DiagLogLevel.WARN,
);

/** Errors and rejections that escaped to the process while a test file ran: forkwatch must never cause one. */
export const escaped: unknown[] = [];
process.on('uncaughtException', error => escaped.push(error));
process.on('unhandledRejection', error => escaped.push(error));

export interface Forkwatch {
  instrumentation: ForkwatchInstrumentation;
  spans(name?: string): ReadableSpan[];
  resetSpans(): void;
  metrics(): Promise<string>;
  teardown(): Promise<void>;
}

/** ForkwatchInstrumentation on private providers, patching the given SDK modules (default: the 1.x client). */
export function setupForkwatch(config: ForkwatchInstrumentationConfig = {}, ...modules: object[]): Forkwatch {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [prometheus] });
  const instrumentation = new ForkwatchInstrumentation({ ...config, enabled: false });
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.enable();
  instrumentation.manuallyInstrument(...(modules.length > 0 ? modules : [streamableHttp]));
  return {
    instrumentation,
    spans: name => exporter.getFinishedSpans().filter(s => name === undefined || s.name === name),
    resetSpans: () => exporter.reset(),
    async metrics() {
      const { resourceMetrics } = await prometheus.collect();
      return new PrometheusSerializer().serialize(resourceMetrics);
    },
    async teardown() {
      instrumentation.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** What the application sees of a session: every notification (as JSON), every onerror message, in order. */
export interface App {
  client: Client;
  transport: InstanceType<typeof StreamableHTTPClientTransport>;
  notifications: string[];
  errors: string[];
  /** Values of `params.data.seq`/`params.data.n` of the logging notifications received, in order. */
  seqs: number[];
  close(): Promise<void>;
}

export interface ConnectOptions {
  reconnect?: { initialReconnectionDelay: number; maxReconnectionDelay: number; reconnectionDelayGrowFactor: number; maxRetries: number };
}

export async function connectApp(url: string, options: ConnectOptions = {}): Promise<App> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    reconnectionOptions: options.reconnect ?? {
      initialReconnectionDelay: 20,
      maxReconnectionDelay: 40,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    },
  });
  const client = new Client({ name: 'forkwatch-hardening', version: '1.0.0' });
  const app: App = {
    client,
    transport,
    notifications: [],
    errors: [],
    seqs: [],
    async close() {
      await transport.close().catch(() => {});
      await client.close().catch(() => {});
    },
  };
  client.fallbackNotificationHandler = async notification => {
    app.notifications.push(JSON.stringify(notification));
    const data = (notification.params as { data?: { seq?: unknown; n?: unknown } } | undefined)?.data;
    const seq = data?.seq ?? data?.n;
    if (typeof seq === 'number') app.seqs.push(seq);
  };
  client.onerror = error => app.errors.push(String(error?.message ?? error));
  await client.connect(transport);
  return app;
}

/** The attribute values of a span and of its events. */
export function allAttributeValues(span: ReadableSpan): unknown[] {
  return [...Object.values(span.attributes), ...span.events.flatMap(e => Object.values(e.attributes ?? {}))];
}

/**
 * Bounded and printable: no control characters (C0, DEL, C1), no lone surrogates, at most `max` UTF-16 units.
 * Returns a description of the first problem, or undefined.
 */
export function unprintable(value: unknown, max = 400): string | undefined {
  if (typeof value !== 'string') return undefined;
  if (value.length > max) return `${value.length} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(value)) return `control character in ${JSON.stringify(value.slice(0, 80))}`;
  if (!value.isWellFormed()) return `lone surrogate in ${JSON.stringify(value.slice(0, 80))}`;
  return undefined;
}

/** Fails with the attribute that is unbounded or unprintable. */
export function expectPrintableSpans(spans: ReadableSpan[], max = 400): void {
  for (const span of spans) {
    for (const value of allAttributeValues(span)) {
      const problem = unprintable(value, max);
      if (problem) throw new Error(`span ${span.name}: attribute value with ${problem}`);
    }
  }
}

/** Verdicts of the client resume spans, as `outcome` or `outcome:reason`. */
export function clientOutcomes(fw: Forkwatch): string[] {
  return fw.spans('forkwatch.client.resume').map(s => {
    const outcome = String(s.attributes['forkwatch.resume.outcome']);
    const reason = s.attributes['forkwatch.resume.reason'];
    return reason === undefined ? outcome : `${outcome}:${reason}`;
  });
}

export interface LabServer {
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * A fork-lab MCP server process (lab/mcp-server.cjs: the real SDK, configured by LAB_SERVER), started here rather than
 * through lab/harness.mjs so that a test can SIGKILL it.
 */
export async function startLabServer(config: Record<string, unknown>): Promise<LabServer> {
  const child = spawn(process.execPath, [join(root, 'lab/mcp-server.cjs')], {
    env: { ...process.env, LAB_SERVER: JSON.stringify({ telemetry: false, ...config }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`lab server did not start: ${err}`)), 20_000);
    child.stderr!.on('data', chunk => (err += chunk));
    child.stdout!.on('data', chunk => {
      out += chunk;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    void exited.then(code => reject(new Error(`lab server exited with ${code}: ${err}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
