/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `node --require forkwatch/register` / `node --import forkwatch/register`, for real: child processes running the real
 * MCP SDK client against the fork lab (a real SDK server behind the lab proxy, which drops the SSE stream once), each
 * scraped over HTTP from this test. Every app must keep its stdout empty.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createServer as createHttpServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GAP_SECONDS_BUCKETS, METRICS } from '../../src/shared/names';
import {
  type AppDir,
  FIXTURES,
  type Lab,
  leasePort,
  labEnv,
  makeAppDir,
  parseMetricFamilies,
  refusesConnections,
  sampleValue,
  scrapeText,
  startApp,
  startLab,
  syncLoaderHooks,
  waitUntil,
} from './support';

let app: AppDir;
let lab: Lab;

beforeAll(async () => {
  app = makeAppDir();
  lab = await startLab();
}, 120_000);

afterAll(async () => {
  await lab?.stop();
  app?.remove();
});

const RESUMED = { transport: 'streamable_http', outcome: 'resumed' };

/** The counter families are created at 0 for every label combination, so they are in every scrape. */
const COUNTER_FAMILIES = Object.values(METRICS)
  .filter(m => m.kind === 'counter')
  .map(m => m.prometheusName);

/** What a fixture app reports when its resume went through and forkwatch patched its transport. */
const HEALTHY = { lost: 0, resumes: [200], patched: true };
const SYNC_LOADER_HOOKS = await syncLoaderHooks();

/**
 * Starts a fixture app against the lab with `forkwatch/register` preloaded by `flag` (none: the app loads it
 * itself) and register's Prometheus exporter on a free port: the set-up every test below shares.
 */
async function labApp(file: string, env: Record<string, string> = {}, flag: string | undefined = '--require') {
  const port = await leasePort();
  const proc = startApp({
    cwd: app.dir,
    args: flag ? [flag, 'forkwatch/register', file] : [file],
    env: { ...(await labEnv(lab)), OTEL_EXPORTER_PROMETHEUS_PORT: String(port), ...env },
  });
  return { port, proc };
}

describe.each([
  { app: 'client-app.cjs', flag: '--require', signal: 'SIGTERM' as const },
  { app: 'client-app.mjs', flag: '--import', signal: 'SIGINT' as const },
  { app: 'client-app.mjs', flag: '--require', signal: 'SIGTERM' as const },
  { app: 'client-app.cjs', flag: '--import', signal: 'SIGINT' as const },
])('node $flag forkwatch/register $app', ({ app: file, flag, signal }) => {
  test(`serves forkwatch's metrics on OTEL_EXPORTER_PROMETHEUS_PORT, counts the resume once, stdout stays empty, ${signal} ends it`, async () => {
    const { port, proc } = await labApp(file, { OTEL_SERVICE_NAME: `fixture-${file}` }, flag);
    const summary = await proc.done();
    expect(summary).toMatchObject(HEALTHY);

    const text = await scrapeText(port);
    const families = parseMetricFamilies(text);
    for (const name of COUNTER_FAMILIES) expect(families.get(name)?.type, name).toBe('counter');
    expect(sampleValue(text, 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(
      sampleValue(text, 'forkwatch_client_forks_total', { transport: 'streamable_http', reason: 'id_regressed' }),
    ).toBe(0);
    const gap = families.get('forkwatch_client_resume_gap_seconds');
    expect(gap?.type).toBe('histogram');
    expect([...(gap?.labels.get('le') ?? [])]).toEqual([...GAP_SECONDS_BUCKETS.map(String), '+Inf']);
    expect(sampleValue(text, 'forkwatch_client_resume_gap_seconds_count')).toBe(1);
    // The standard variables reach NodeSDK: OTEL_SERVICE_NAME names the resource.
    expect(sampleValue(text, 'target_info', { service_name: `fixture-${file}` })).toBe(1);

    const t0 = performance.now();
    const exit = await proc.stop(signal);
    // No listener of the app's own: after the flush, the signal takes its default course (the time is a figure: the
    // 5 s cap and the app listener's case are tested in signals.test.ts).
    process.stderr.write(`${file} ${flag}: ended by ${signal} ${(performance.now() - t0) | 0} ms after it was sent\n`);
    expect(exit).toEqual({ code: null, signal });
    expect(proc.stdout()).toBe('');
    // Nothing on stderr but the app's own report: no diagnostics, no loader warning.
    expect(proc.stderr()).toMatch(/^FIXTURE DONE \{.*\}\n$/);
  });
});

test('--require and --import together: registered once (one SDK, one patch, no port conflict)', async () => {
  const port = await leasePort();
  const proc = startApp({
    cwd: app.dir,
    args: ['--require', 'forkwatch/register', '--import', 'forkwatch/register', 'client-app.mjs'],
    env: { ...(await labEnv(lab)), OTEL_EXPORTER_PROMETHEUS_PORT: String(port) },
  });
  expect(await proc.done()).toMatchObject(HEALTHY);
  expect(sampleValue(await scrapeText(port), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
  expect(proc.stdout()).toBe('');
  expect(proc.stderr()).toMatch(/^FIXTURE DONE \{.*\}\n$/);
});

test('NODE_OPTIONS=--require forkwatch/register npm start: npm itself is left alone, the app it starts gets the port', async () => {
  const port = await leasePort();
  writeFileSync(
    join(app.dir, 'package.json'),
    JSON.stringify({ name: 'npm-start-app', private: true, scripts: { start: 'node client-app.cjs' } }),
  );
  const proc = startApp({
    command: process.platform === 'win32' ? 'npm.cmd' : 'npm',
    args: ['start', '--silent'],
    cwd: app.dir,
    env: {
      ...(await labEnv(lab)),
      NODE_OPTIONS: '--require forkwatch/register',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
    },
  });
  try {
    expect(await proc.done()).toMatchObject(HEALTHY);
    expect(sampleValue(await scrapeText(port), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(proc.forkwatchLines()).toEqual([]);
    expect(proc.stdout()).toBe('');
  } finally {
    rmSync(join(app.dir, 'package.json'), { force: true });
  }
});

test('worker threads inherit --require: register stays out of them', async () => {
  const port = await leasePort();
  const proc = startApp({
    cwd: app.dir,
    args: ['--require', 'forkwatch/register', 'worker-app.cjs'],
    env: { OTEL_EXPORTER_PROMETHEUS_PORT: String(port) },
  });
  await proc.done();
  expect(proc.stderr()).toMatch(/FIXTURE WORKER object/);
  // The main thread's SDK serves; a second one in the worker would have logged EADDRINUSE.
  const text = await waitUntil(() => scrapeText(port), { what: `metrics on :${port}`, timeoutMs: 10_000 });
  expect(parseMetricFamilies(text).get('forkwatch_client_resumes_total')?.type).toBe('counter');
  expect(proc.forkwatchLines()).toEqual([]);
  expect(proc.stdout()).toBe('');
});

describe('a process loads the patches of the classes it has, and no others', () => {
  /** forkwatch's modules a fixture process loaded (modules-app.cjs), by path under build/src. */
  async function modulesOf(side: 'server' | 'client'): Promise<string[]> {
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'modules-app.cjs', side],
      env: { OTEL_METRICS_EXPORTER: 'none', OTEL_TRACES_EXPORTER: 'none' },
    });
    const [, list] = await proc.waitForStderr(/FIXTURE MODULES (.*)\n/, 20_000);
    proc.child.kill('SIGTERM');
    await proc.exited;
    expect(proc.forkwatchLines()).toEqual([]);
    return JSON.parse(list!) as string[];
  }
  // What only a client runs: its patches, the wire observer's work, the ledger, the frame observer, 2026 clients.
  const CLIENT_ONLY = [
    'client/patches/streamable-http-client.js',
    'client/patches/sse-client.js',
    'client/wire/session-get.js',
    'client/wire/fetch-session-get.js',
    'client/wire/channel-watches.js',
    'client/observer/resumed-stream.js',
    'core/ledger.js',
    'core/sse-frame-observer.js',
    'client/wire/per-request-exchange.js',
  ];
  // What only a server runs: its patch and observers, the delivery ledger, the 2026 per-request server.
  const SERVER_ONLY = [
    'server/stacks/sdk/index.js',
    'server/stacks/sdk/patch.js',
    'server/stacks/sdk/session-observer.js',
    'server/server-delivery.js',
    'core/delivery-ledger.js',
    'server/stacks/sdk-per-request/patch.js',
    'server/stacks/sdk-per-request/observer.js',
  ];

  test('a server (SDK 1.x): its own patch, no client code and no per-request code', async () => {
    const loaded = await modulesOf('server');
    expect(loaded).toEqual(expect.arrayContaining(['lifecycle/instrumentation.js', 'server/stacks/sdk/patch.js']));
    expect(loaded.filter(m => CLIENT_ONLY.includes(m) || m.startsWith('server/stacks/sdk-per-request/'))).toEqual([]);
  });

  test('a client (SDK 1.x): its own patch, no server code', async () => {
    const loaded = await modulesOf('client');
    expect(loaded).toEqual(
      expect.arrayContaining(['lifecycle/instrumentation.js', 'client/patches/streamable-http-client.js']),
    );
    expect(loaded.filter(m => SERVER_ONLY.includes(m))).toEqual([]);
  });
});

test('an app that loads the MCP SDK first and requires forkwatch/register afterwards (CommonJS) is instrumented', async () => {
  const { port, proc } = await labApp('client-app.cjs', { FIXTURE_REGISTER_LATE: '1' }, undefined);
  expect(await proc.done()).toMatchObject(HEALTHY);
  expect(sampleValue(await scrapeText(port), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
  expect(proc.stdout()).toBe('');
  expect(proc.forkwatchLines()).toEqual([]);
});

describe('an app that runs its own OpenTelemetry SDK', () => {
  test.each([
    { own: '0', what: 'CommonJS, SDK started in the main module: detected, reported through the app SDK' },
    { own: '1', what: 'CommonJS, and the app puts its own ForkwatchInstrumentation in it too: still patched once' },
  ])('$what', async ({ own }) => {
    const appPort = await leasePort();
    const registerPort = await leasePort();
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'own-sdk-app.cjs'],
      env: {
        ...(await labEnv(lab)),
        APP_METRICS_PORT: String(appPort),
        OTEL_EXPORTER_PROMETHEUS_PORT: String(registerPort),
        FIXTURE_OWN_FORKWATCH: own,
      },
    });
    expect(await proc.done()).toMatchObject(HEALTHY);
    const text = await scrapeText(appPort);
    // One resume, counted once: one patch, one set of instruments in the app's MeterProvider.
    expect(sampleValue(text, 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(sampleValue(text, 'forkwatch_client_resume_gap_seconds_count')).toBe(1);
    // No second SDK: nothing listens where register's exporter would have.
    expect(await refusesConnections(registerPort)).toBe(true);
    expect(proc.stdout()).toBe('');
    expect(proc.forkwatchLines()).toEqual([]);
  });

  /** own-sdk-app.mjs under `--import forkwatch/register`: the app's Prometheus port and register's, and `env`. */
  async function startOwnSdkEsmApp(env: Record<string, string>) {
    const appPort = await leasePort();
    const registerPort = await leasePort();
    const proc = startApp({
      cwd: app.dir,
      args: ['--import', 'forkwatch/register', 'own-sdk-app.mjs'],
      env: {
        ...(await labEnv(lab)),
        APP_METRICS_PORT: String(appPort),
        OTEL_EXPORTER_PROMETHEUS_PORT: String(registerPort),
        ...env,
      },
    });
    return { proc, appPort, registerPort };
  }

  test('ESM, SDK started in the main module, FORKWATCH_START_SDK=false: reports through the app SDK once it registers', async () => {
    const { proc, appPort, registerPort } = await startOwnSdkEsmApp({ FORKWATCH_START_SDK: 'false' });
    expect(await proc.done()).toMatchObject(HEALTHY);
    expect(sampleValue(await scrapeText(appPort), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(await refusesConnections(registerPort)).toBe(true);
    expect(proc.stdout()).toBe('');
    expect(proc.forkwatchLines()).toEqual([]);
  });

  test('ESM, SDK started in the main module after register decided: one line says what to set; the app runs on', async () => {
    const { proc, registerPort } = await startOwnSdkEsmApp({ APP_SDK_AFTER_MS: '200' });
    expect(await proc.done()).toMatchObject(HEALTHY);
    const lines = proc.forkwatchLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /registered its own OpenTelemetry SDK after forkwatch\/register.*FORKWATCH_START_SDK=false/,
    );
    // Documented trade-off: register's SDK (started first) holds the globals and forkwatch's metrics.
    expect(sampleValue(await scrapeText(registerPort), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(proc.stdout()).toBe('');
  });

  test('ESM, SDK started at the main module top level: seen before register decides where the loader hooks are synchronous', async () => {
    const { proc, appPort, registerPort } = await startOwnSdkEsmApp({});
    expect(await proc.done()).toMatchObject(HEALTHY);
    expect(proc.stdout()).toBe('');
    if (SYNC_LOADER_HOOKS) {
      // module.registerHooks: the main module's top level ran in the same turn, so the app's SDK carries the metric.
      expect(proc.forkwatchLines()).toEqual([]);
      expect(sampleValue(await scrapeText(appPort), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
      expect(await refusesConnections(registerPort)).toBe(true);
    } else {
      expect(proc.forkwatchLines()).toEqual([expect.stringMatching(/FORKWATCH_START_SDK=false/)]);
      expect(sampleValue(await scrapeText(registerPort), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    }
  });
});

describe('FORKWATCH_* settings reach the instrumentation', () => {
  test('FORKWATCH_ON_FORK=abort: the fork reaches the app as StreamForkDetected (fail-loud) and is counted', async () => {
    const { port, proc } = await labApp('client-app.cjs', {
      FIXTURE_SCENARIO: 'fail-loud',
      FORKWATCH_ON_FORK: 'abort',
      FORKWATCH_VERDICT_TIMEOUT_MS: '1500',
    });
    const summary = await proc.done();
    expect(summary.errors).toContain('StreamForkDetected');
    const text = await scrapeText(port);
    expect(
      sampleValue(text, 'forkwatch_client_resumes_total', { transport: 'streamable_http', outcome: 'forked' }),
    ).toBe(1);
    expect(
      sampleValue(text, 'forkwatch_client_forks_total', { transport: 'streamable_http', reason: 'id_regressed' }),
    ).toBe(1);
    expect(proc.forkwatchLines()).toEqual([]);
    expect(proc.stdout()).toBe('');
  });

  test('default (record): the same fork is counted, and no StreamForkDetected reaches the app', async () => {
    const { port, proc } = await labApp('client-app.cjs', { FIXTURE_SCENARIO: 'live-fork' });
    const summary = await proc.done();
    expect(summary.errors).not.toContain('StreamForkDetected');
    expect(summary.lost).toBeGreaterThan(0);
    const text = await scrapeText(port);
    expect(
      sampleValue(text, 'forkwatch_client_forks_total', { transport: 'streamable_http', reason: 'id_regressed' }),
    ).toBe(1);
  });
});

describe('configuration problems: one clear stderr line each, and the app keeps running', () => {
  test('bad FORKWATCH_* and OTEL_* values: defaults used, still instrumented and served', async () => {
    const { port, proc } = await labApp('client-app.cjs', {
      FORKWATCH_CODEC: 'bogus',
      FORKWATCH_VERDICT_TIMEOUT_MS: '12abc',
      FORKWATCH_LEDGER_RECENT_IDS: '0',
      FORKWATCH_CAPTURE_EVENT_IDS: 'maybe',
      OTEL_METRICS_EXPORTER: 'prometheus,bogus',
      OTEL_TRACES_EXPORTER: 'jaeger',
      OTEL_SDK_DISABLED: 'nope',
    });
    expect(await proc.done()).toMatchObject(HEALTHY);
    expect(sampleValue(await scrapeText(port), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    const lines = proc.forkwatchLines();
    const expected = [
      /FORKWATCH_CODEC="bogus" is not one of .*; using auto/,
      /FORKWATCH_VERDICT_TIMEOUT_MS="12abc" is not an integer .*; using 10000/,
      /FORKWATCH_LEDGER_RECENT_IDS="0" is not an integer .*; using 64/,
      /FORKWATCH_CAPTURE_EVENT_IDS="maybe" is not a boolean.*; using true/,
      /OTEL_METRICS_EXPORTER: "bogus": unknown exporter.*; left out/,
      /OTEL_TRACES_EXPORTER: "jaeger": unknown exporter.*; using none/,
      /OTEL_SDK_DISABLED="nope" is not a boolean.*; using false/,
    ];
    expect(lines).toHaveLength(expected.length);
    for (const pattern of expected)
      expect(
        lines.filter(l => pattern.test(l)),
        String(pattern),
      ).toHaveLength(1);
    expect(proc.stdout()).toBe('');
  });

  test('the Prometheus port is already in use: one line naming the port, no crash, the app finishes normally', async () => {
    const blocker = createServer();
    const port = await new Promise<number>(resolve =>
      blocker.listen(0, () => resolve((blocker.address() as { port: number }).port)),
    );
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'client-app.cjs'],
      env: { ...(await labEnv(lab)), OTEL_EXPORTER_PROMETHEUS_PORT: String(port), FIXTURE_EXIT: '1' },
    });
    try {
      expect(await proc.done()).toMatchObject(HEALTHY);
      expect(await proc.exited).toEqual({ code: 0, signal: null });
      const lines = proc.forkwatchLines();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `cannot serve Prometheus metrics on all interfaces port ${port}: the port is already in use \\(EADDRINUSE\\); set OTEL_EXPORTER_PROMETHEUS_PORT`,
        ),
      );
      expect(proc.stdout()).toBe('');
    } finally {
      blocker.close();
    }
  });

  test('a port that is not a number, and an unknown log level: one line each, the app runs', async () => {
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'noop-app.cjs'],
      env: { OTEL_EXPORTER_PROMETHEUS_PORT: 'ninety-four', OTEL_LOG_LEVEL: 'chatty', OTEL_METRICS_EXPORTER: 'none' },
    });
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.stderr()).toMatch(/FIXTURE RAN/);
    expect(proc.forkwatchLines()).toEqual([
      'forkwatch: OTEL_EXPORTER_PROMETHEUS_PORT="ninety-four" is not an integer from 1 to 65535; using 9464',
      'forkwatch: OTEL_LOG_LEVEL="chatty" is not one of none, error, warn, info, debug, verbose, all; using warn',
    ]);
    expect(proc.stdout()).toBe('');
  });
});

describe('standard variables', () => {
  test('nothing set: Prometheus metrics on port 9464 (all interfaces)', async () => {
    // The preload hands the listen() on 9464 a port from the OS and reports both: the test never needs 9464 free.
    const proc = startApp({
      cwd: app.dir,
      args: [
        '--require',
        join(FIXTURES, 'default-port-to-os.cjs'),
        '--require',
        'forkwatch/register',
        'client-app.cjs',
      ],
      env: await labEnv(lab),
    });
    const listen = JSON.parse((await proc.waitForStderr(/FIXTURE LISTEN (.*)\n/))[1]!) as {
      requested: number;
      host: string | null;
      port: number;
    };
    expect(listen.requested).toBe(9464);
    expect([null, '', '0.0.0.0', '::']).toContain(listen.host); // all interfaces
    expect(await proc.done()).toMatchObject({ lost: 0, patched: true });
    expect(sampleValue(await scrapeText(listen.port), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(proc.forkwatchLines()).toEqual([]);
    expect(proc.stdout()).toBe('');
  });

  test('OTEL_EXPORTER_PROMETHEUS_HOST: the endpoint listens on that address only', async () => {
    const { port, proc } = await labApp('client-app.cjs', { OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.2' });
    expect(await proc.done()).toMatchObject({ lost: 0, patched: true });
    const text = await scrapeText(port, '/metrics', { host: '127.0.0.2' });
    expect(sampleValue(text, 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    expect(await refusesConnections(port)).toBe(true); // 127.0.0.1
  });

  test('OTEL_SDK_DISABLED=true: nothing is patched, nothing is served, nothing is printed', async () => {
    const { port, proc } = await labApp('client-app.cjs', { OTEL_SDK_DISABLED: 'true', FIXTURE_EXIT: '1' });
    expect(await proc.done()).toMatchObject({ lost: 0, patched: false });
    expect(await refusesConnections(port)).toBe(true);
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.forkwatchLines()).toEqual([]);
    expect(proc.stdout()).toBe('');
  });

  test('OTEL_LOG_LEVEL=debug: OpenTelemetry diagnostics go to stderr, never stdout', async () => {
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'noop-app.cjs'],
      env: { OTEL_LOG_LEVEL: 'debug', OTEL_METRICS_EXPORTER: 'none', FIXTURE_TURN: '1' },
    });
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.stderr()).toMatch(/^forkwatch: opentelemetry debug: .*Registered a global for propagation/m);
    expect(proc.stderr()).toMatch(/^FIXTURE MODE sdk$/m);
    expect(proc.stdout()).toBe('');
  });

  test('a process that ends on its first turn of the event loop starts no SDK; what forkwatch said is written at exit', async () => {
    // Issue 50: a CLI or a shim that does no I/O ends before register decides, and never pays for an SDK and its
    // Prometheus listener. What forkwatch held until the decision (its patch, at debug level) is still said.
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'noop-app.cjs'],
      env: { OTEL_LOG_LEVEL: 'debug', FIXTURE_LOAD_SDK: '1' },
    });
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    if (loaderHooksInThread()) {
      // Where the loader hooks run in a thread (module.register: Node 22.15, lifecycle/esm-loader.ts), loading them
      // turns the event loop before the app's first line: register decides then and starts its SDK, as before.
      expect(proc.stderr()).toMatch(/^FIXTURE MODE sdk$/m);
    } else {
      expect(proc.stderr()).toMatch(/^FIXTURE MODE pending$/m);
      expect(proc.stderr()).not.toMatch(/Registered a global for (?:propagation|metrics)/);
    }
    expect(proc.stderr()).toMatch(
      /^forkwatch: opentelemetry debug: forkwatch patched StreamableHTTPClientTransport of @modelcontextprotocol\/sdk@/m,
    );
    expect(proc.stdout()).toBe('');
  });

  test("an app that waits for register's `ready` and nothing else is kept alive until register decided", async () => {
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'noop-app.cjs'],
      env: { OTEL_METRICS_EXPORTER: 'none', FIXTURE_READY: '1' },
    });
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.stderr()).toMatch(/^FIXTURE READY sdk$/m);
    expect(proc.stderr()).toMatch(/^FIXTURE MODE sdk$/m);
  });

  test('OTEL_METRICS_EXPORTER=console and OTEL_TRACES_EXPORTER=console print to stderr (flushed at exit), not stdout', async () => {
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'client-app.cjs'],
      env: {
        ...(await labEnv(lab)),
        OTEL_METRICS_EXPORTER: 'console',
        OTEL_TRACES_EXPORTER: 'console',
        FIXTURE_EXIT: '1',
      },
    });
    expect(await proc.done()).toMatchObject({ lost: 0, patched: true });
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(proc.stderr()).toMatch(/name: 'forkwatch\.client\.resumes'/);
    expect(proc.stderr()).toMatch(/name: 'forkwatch\.client\.resume',/);
    expect(proc.stdout()).toBe('');
  });

  /** What these tests read of an OTLP/JSON metrics export. */
  interface OtlpJsonMetrics {
    resourceMetrics: {
      scopeMetrics: {
        metrics: {
          name: string;
          sum?: {
            dataPoints: {
              attributes: { key: string; value: { stringValue?: string } }[];
              asInt?: number | string;
              asDouble?: number;
            }[];
          };
        }[];
      }[];
    }[];
  }
  /** What these tests read of an OTLP/JSON traces export. */
  interface OtlpJsonTraces {
    resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[];
  }
  /** What these tests read of a Zipkin v2 span list. */
  type ZipkinSpans = { name: string }[];

  /** An HTTP server on 127.0.0.1 that keeps every JSON body posted to it. */
  async function jsonReceiver() {
    const received: { path: string; body: unknown }[] = [];
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', c => (body += c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body: JSON.parse(body) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    const port = await new Promise<number>(resolve =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    );
    return { received, port, close: () => server.close() };
  }

  test('OTEL_TRACES_EXPORTER=zipkin (read by NodeSDK as usual): the resume span reaches OTEL_EXPORTER_ZIPKIN_ENDPOINT', async () => {
    const { received, port, close } = await jsonReceiver();
    try {
      const proc = startApp({
        cwd: app.dir,
        args: ['--require', 'forkwatch/register', 'client-app.cjs'],
        env: {
          ...(await labEnv(lab)),
          OTEL_METRICS_EXPORTER: 'none',
          OTEL_TRACES_EXPORTER: 'zipkin',
          OTEL_EXPORTER_ZIPKIN_ENDPOINT: `http://127.0.0.1:${port}/api/v2/spans`,
          FIXTURE_EXIT: '1',
        },
      });
      expect(await proc.done()).toMatchObject({ lost: 0, patched: true });
      expect(await proc.exited).toEqual({ code: 0, signal: null });
      const spans = received.filter(r => r.path === '/api/v2/spans').flatMap(r => r.body as ZipkinSpans);
      expect(spans.map(s => s.name)).toContain('forkwatch.client.resume');
      expect(proc.stdout()).toBe('');
      expect(proc.forkwatchLines()).toEqual([]);
    } finally {
      close();
    }
  });

  test('OTEL_METRICS_EXPORTER=otlp over http/json, traces to the same OTLP endpoint: the exit flush delivers the resume', async () => {
    const { received, port, close } = await jsonReceiver();
    try {
      const proc = startApp({
        cwd: app.dir,
        args: ['--require', 'forkwatch/register', 'client-app.cjs'],
        env: {
          ...(await labEnv(lab)),
          OTEL_METRICS_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
          // Only the flush at exit can deliver within this test.
          OTEL_METRIC_EXPORT_INTERVAL: '600000',
          FIXTURE_EXIT: '1',
        },
      });
      expect(await proc.done()).toMatchObject({ lost: 0, patched: true });
      expect(await proc.exited).toEqual({ code: 0, signal: null });
      expect(proc.stdout()).toBe('');
      expect(proc.forkwatchLines()).toEqual([]);

      const metrics = received
        .filter(r => r.path === '/v1/metrics')
        .flatMap(r => (r.body as OtlpJsonMetrics).resourceMetrics.flatMap(rm => rm.scopeMetrics));
      const resumes = metrics.flatMap(sm => sm.metrics).find(m => m.name === 'forkwatch.client.resumes');
      const point = resumes!.sum!.dataPoints.find(
        p =>
          p.attributes.some(a => a.key === 'outcome' && a.value.stringValue === 'resumed') &&
          p.attributes.some(a => a.key === 'transport' && a.value.stringValue === 'streamable_http'),
      );
      expect(Number(point!.asInt ?? point!.asDouble)).toBe(1);
      const spans = received
        .filter(r => r.path === '/v1/traces')
        .flatMap(r => (r.body as OtlpJsonTraces).resourceSpans.flatMap(rs => rs.scopeSpans.flatMap(ss => ss.spans)));
      expect(spans.map(s => s.name)).toContain('forkwatch.client.resume');
    } finally {
      close();
    }
  });
});

describe('loader hooks: nothing on stderr on any runtime (Node 26 deprecates module.register, DEP0205)', () => {
  test.each([
    ['--require', 'forkwatch/register', 'client-app.cjs'],
    ['--import', 'forkwatch/register', 'client-app.mjs'],
    // An ESM app that runs its own NodeSDK with ForkwatchInstrumentation: only the loader hooks come from the flag.
    ['--import', 'forkwatch/hooks', 'own-sdk-app.mjs'],
  ])('node %s %s %s: the app is instrumented and stderr carries only its own lines', async (flag, entry, file) => {
    const port = await leasePort();
    const proc = startApp({
      cwd: app.dir,
      args: [flag, entry, file],
      env: {
        ...(await labEnv(lab)),
        OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
        APP_METRICS_PORT: String(port),
        FIXTURE_OWN_FORKWATCH: '1',
      },
    });
    expect(await proc.done()).toMatchObject(HEALTHY);
    expect(sampleValue(await scrapeText(port), 'forkwatch_client_resumes_total', RESUMED)).toBe(1);
    await proc.stop('SIGTERM');
    // Every stderr line is the fixture's own: no warning of Node's, none of forkwatch's.
    const foreign = proc
      .stderr()
      .split('\n')
      .filter(line => line !== '' && !line.startsWith('FIXTURE '));
    expect(foreign).toEqual([]);
    expect(proc.stdout()).toBe('');
  });
});

/** Whether forkwatch/register's ESM loader hooks run in a loader thread on this runtime (lifecycle/esm-loader.ts). */
function loaderHooksInThread(): boolean {
  const iitm = createRequire(require.resolve('@opentelemetry/instrumentation'));
  try {
    const sync = iitm('import-in-the-middle/register-hooks.mjs') as { supportsSyncHooks?: () => boolean };
    return !(typeof require('node:module').registerHooks === 'function' && sync.supportsSyncHooks?.() === true);
  } catch {
    return true;
  }
}
