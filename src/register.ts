/**
 * forkwatch/register: zero-code install.
 *
 *   node --require forkwatch/register app.js     (CommonJS apps)
 *   node --import forkwatch/register app.mjs     (ESM apps; --require works for them too)
 *
 * One CommonJS file serves both flags. Loading it:
 *  1. reads FORKWATCH_* and the OTEL_* variables it interprets (env-config.ts), one stderr line per unusable value;
 *  2. registers the ESM loader hooks of the import-in-the-middle copy that forkwatch's own
 *     @opentelemetry/instrumentation uses (a loader from another copy would patch nothing);
 *  3. creates and enables ForkwatchInstrumentation synchronously, so its hooks exist before the app loads the MCP SDK
 *     (an SDK loaded earlier under CommonJS is patched from require.cache);
 *  4. one tick later, when a CommonJS main module has run its top level, decides how to report: through the
 *     OpenTelemetry providers the app registered (its own SDK), or through a NodeSDK that it starts itself, by default
 *     serving Prometheus metrics on :9464.
 *
 * It never writes to stdout (an stdio MCP server's stdout is its protocol stream) and never throws into the app: a bad
 * setting or a busy port gives one diagnostic on stderr and the app keeps running, uninstrumented if need be.
 */
import type { MeterProvider as ApiMeterProvider } from '@opentelemetry/api';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { Server } from 'node:http';
import { isMainThread } from 'node:worker_threads';
import { StderrDiagLogger, StderrMetricExporter, StderrSpanProcessor, writeStderr } from './register-stderr';
import { type LogLevelName, type RegisterEnvConfig, readRegisterEnv } from './env-config';
import type { ForkwatchInstrumentation } from './instrumentation';
import type { ForkwatchMetricReader, ForkwatchRegistration } from './prom-client';
import type { StartedSdk } from './register-sdk';

/** Same symbol as prom-client.ts REGISTRATION_KEY (Symbol.for is process-wide, so copies of forkwatch agree too). */
const REGISTRATION_KEY = Symbol.for('forkwatch.register');
const ESM_HOOK_KEY = Symbol.for('forkwatch.esm-hook');
const OTEL_API_KEY = Symbol.for('opentelemetry.js.api.1');
/** How long a SIGTERM/SIGINT waits for the last export before the signal takes its course. */
const SHUTDOWN_TIMEOUT_MS = 5_000;
/** The longest a scrape of the Prometheus endpoint waits for resource detection. */
const RESOURCE_TIMEOUT_MS = 2_000;
/** How often, when the app runs its own SDK, register looks whether the global MeterProvider changed. */
const FOLLOW_INTERVAL_MS = 500;
/** Where the Prometheus exporter serves, as its own server would. */
const PROMETHEUS_PATH = '/metrics';

/** DiagLogLevel values of @opentelemetry/api. */
const LEVEL: Record<LogLevelName, number> = {
  none: 0,
  error: 30,
  warn: 50,
  info: 60,
  debug: 70,
  verbose: 80,
  all: 9999,
};

type Globals = Record<symbol, unknown>;

// ---------------------------------------------------------------------------------------------------------------

/** The global registry of @opentelemetry/api 1.x: which providers someone registered, whatever copy of the API. */
function otelGlobals(): Record<string, unknown> {
  return ((globalThis as Globals)[OTEL_API_KEY] as Record<string, unknown> | undefined) ?? {};
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------------------------

class Registration implements ForkwatchRegistration {
  mode: ForkwatchRegistration['mode'] = 'pending';
  instrumentation: ForkwatchInstrumentation | undefined;
  promClientReader: ForkwatchMetricReader | undefined;
  readonly ready: Promise<void>;
  private markReady!: () => void;
  private sdk: StartedSdk | undefined;
  private prometheus: PrometheusExporter | undefined;
  private prometheusServer: Server | undefined;
  private readonly extraMeterProviders: ApiMeterProvider[] = [];
  private shutdownPromise: Promise<void> | undefined;
  private warnedAboutLateSdk = false;

  constructor(
    private readonly env: RegisterEnvConfig,
    private readonly say: (line: string) => void,
  ) {
    this.ready = new Promise(resolve => (this.markReady = resolve));
  }

  /** Something threw while setting up: the app runs on, without forkwatch's exporters. */
  fail(): void {
    this.mode = 'failed';
    this.markReady();
  }

  start(): void {
    if (this.env.sdkDisabled) {
      this.mode = 'disabled';
      this.markReady();
      return;
    }
    this.installEsmHook();
    const { ForkwatchInstrumentation } = require('./instrumentation') as typeof import('./instrumentation');
    // Enabled by its constructor: the require hooks and the require.cache scan are in place from here on.
    this.instrumentation = new ForkwatchInstrumentation({ ...this.env.instrumentation });
    // One tick later a CommonJS main module (`--require`) has run its top level, and every --require preload has
    // run: an SDK the app starts there is seen. ESM main modules run later, after their imports load; an ESM app
    // that starts its own SDK sets FORKWATCH_START_SDK=false (and is told so if it does not).
    setImmediate(() => this.decide());
  }

  private installEsmHook(): void {
    const globals = globalThis as Globals;
    if (globals[ESM_HOOK_KEY]) return;
    globals[ESM_HOOK_KEY] = true;
    try {
      const mod = require('node:module') as { register?: (specifier: string) => void };
      if (typeof mod.register !== 'function') {
        this.say(
          'this Node.js cannot register ESM loader hooks (module.register, Node >= 20.6): ESM code is not instrumented',
        );
        return;
      }
      const { pathToFileURL } = require('node:url') as typeof import('node:url');
      // Resolved from forkwatch's own dependency: the loader must come from the same import-in-the-middle copy as
      // the Hook the instrumentation registers, or nothing is patched.
      mod.register(pathToFileURL(require.resolve('@opentelemetry/instrumentation/hook.mjs')).href);
    } catch (error) {
      this.say(`could not register the ESM loader hooks (${describeError(error)}): ESM code is not instrumented`);
    }
  }

  private decide(): void {
    try {
      const globals = otelGlobals();
      if (!this.env.startSdk || globals.trace || globals.metrics) {
        this.mode = 'app-sdk';
        this.followGlobalMeterProvider();
      } else {
        this.startSdk(Boolean(globals.context), Boolean(globals.propagation));
        this.mode = 'sdk';
      }
    } catch (error) {
      this.mode = 'failed';
      this.say(
        `could not start the OpenTelemetry SDK (${describeError(error)}); the app runs without forkwatch's exporters`,
      );
    } finally {
      this.markReady();
    }
  }

  private startSdk(contextRegistered: boolean, propagatorRegistered: boolean): void {
    const { diag } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
    diag.setLogger(new StderrDiagLogger(message => this.onOtelError(message)), {
      logLevel: LEVEL[this.env.logLevel],
      suppressOverrideMessage: true,
    });
    const { startSdk } = require('./register-sdk') as typeof import('./register-sdk');
    const sdk = startSdk(
      {
        metricReaders: this.metricReaders(),
        tracesExporters: this.env.tracesExporters,
        logsExporters: this.env.logsExporters,
        keepContextManager: contextRegistered,
        keepPropagator: propagatorRegistered,
        say: this.say,
      },
      () => new StderrSpanProcessor(),
    );
    this.sdk = sdk;
    this.installExitHandlers();
    this.applyMeterProvider();
    if (this.prometheus) {
      // The Prometheus exporter reads the resource without waiting for the detectors' async attributes (host.id),
      // and logs an error on every scrape that comes before they settle: scrapes wait for them (bounded).
      const settled = Promise.resolve(sdk.resource.waitForAsyncAttributes?.()).catch(() => undefined);
      this.startPrometheusServer(this.prometheus, () =>
        withTimeout(settled, RESOURCE_TIMEOUT_MS).catch(() => undefined),
      );
    }
  }

  private metricReaders(): IMetricReader[] {
    const readers: IMetricReader[] = [];
    const { otlpMetricReader, periodicReader } = require('./register-sdk') as typeof import('./register-sdk');
    for (const name of this.env.metricsExporters) {
      try {
        if (name === 'prometheus') {
          const { PrometheusExporter } =
            require('@opentelemetry/exporter-prometheus') as typeof import('@opentelemetry/exporter-prometheus');
          // register serves the exporter's handler from its own server: a busy port gives one clear line, and the
          // server and its connections never keep a finished app alive.
          const exporter = new PrometheusExporter({ preventServerStart: true });
          this.prometheus = exporter;
          readers.push(exporter);
        } else if (name === 'otlp') {
          const reader = otlpMetricReader(this.say);
          if (reader) readers.push(reader);
        } else {
          readers.push(periodicReader(new StderrMetricExporter()));
        }
      } catch (error) {
        this.say(`OTEL_METRICS_EXPORTER: could not create the ${name} exporter (${describeError(error)}); left out`);
      }
    }
    if (readers.length > 0) {
      // For forkwatch/prom-client: idle until a registry is scraped.
      const { ForkwatchMetricReader } = require('./prom-client') as typeof import('./prom-client');
      this.promClientReader = new ForkwatchMetricReader();
      readers.push(this.promClientReader);
    }
    return readers;
  }

  private startPrometheusServer(exporter: PrometheusExporter, resourceSettled: () => Promise<void>): void {
    const { host, port } = this.env.prometheus;
    const where = `${host ?? 'all interfaces'} port ${port}`;
    const { createServer } = require('node:http') as typeof import('node:http');
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      if (request.method !== 'GET' || path !== PROMETHEUS_PATH) return void response.writeHead(404).end('Not found');
      void resourceSettled().then(() => exporter.getMetricsRequestHandler(request, response));
    });
    server.on('connection', socket => socket.unref());
    server.once('error', (error: NodeJS.ErrnoException) => {
      const reason =
        error?.code === 'EADDRINUSE'
          ? 'the port is already in use (EADDRINUSE); set OTEL_EXPORTER_PROMETHEUS_PORT to a free port'
          : `${describeError(error)}; check OTEL_EXPORTER_PROMETHEUS_HOST and OTEL_EXPORTER_PROMETHEUS_PORT`;
      this.say(
        `cannot serve Prometheus metrics on ${where}: ${reason}. The app keeps running without forkwatch's /metrics`,
      );
    });
    server.listen(port, host, () => server.unref());
    server.unref();
    this.prometheusServer = server;
  }

  /** The API reports an SDK registered after ours as a duplicate registration: say once what to do about it. */
  private onOtelError(message: string): boolean {
    if (!message.includes('Attempted duplicate registration of API')) return false;
    if (!this.warnedAboutLateSdk) {
      this.warnedAboutLateSdk = true;
      this.say(
        "the app registered its own OpenTelemetry SDK after forkwatch/register had started one, so the app's providers are not active. " +
          'Set FORKWATCH_START_SDK=false when the app runs its own SDK (or add ForkwatchInstrumentation to it instead of forkwatch/register)',
      );
    }
    return true;
  }

  /** When the app runs its own SDK: report to its global MeterProvider, including one it registers later. */
  private followGlobalMeterProvider(): void {
    const { metrics } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
    let current = metrics.getMeterProvider();
    this.applyMeterProvider();
    setInterval(() => {
      try {
        const provider = metrics.getMeterProvider();
        if (provider === current) return;
        current = provider;
        this.applyMeterProvider();
      } catch {
        // never throw from a timer into the app
      }
    }, FOLLOW_INTERVAL_MS).unref();
  }

  addMeterProvider(provider: ApiMeterProvider): void {
    this.extraMeterProviders.push(provider);
    this.applyMeterProvider();
  }

  private applyMeterProvider(): void {
    if (!this.instrumentation) return;
    const { metrics } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
    const global = metrics.getMeterProvider();
    if (this.extraMeterProviders.length === 0) {
      this.instrumentation.setMeterProvider(global);
      return;
    }
    const { teeMeterProvider } = require('./prom-client') as typeof import('./prom-client');
    this.instrumentation.setMeterProvider(teeMeterProvider([global, ...this.extraMeterProviders]));
  }

  // --- shutdown ---

  private installExitHandlers(): void {
    const onSignal = (signal: NodeJS.Signals) => {
      process.removeListener('SIGTERM', onTerm);
      process.removeListener('SIGINT', onInt);
      void this.shutdown().then(() => {
        // Our listener replaced Node's default action: if the app has no listener of its own, take that action now.
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    };
    const onTerm = () => onSignal('SIGTERM');
    const onInt = () => onSignal('SIGINT');
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    // The event loop ran dry: push what periodic exporters hold (once; the exit follows when the flush is done).
    process.once('beforeExit', () => void this.flush());
  }

  private async flush(): Promise<void> {
    await withTimeout(this.sdk ? this.sdk.flush() : Promise.resolve()).catch(error =>
      this.say(`flushing telemetry at exit failed: ${describeError(error)}`),
    );
  }

  shutdown(): Promise<void> {
    this.prometheusServer?.close();
    this.shutdownPromise ??= withTimeout(this.sdk ? this.sdk.shutdown() : Promise.resolve()).catch(error =>
      this.say(`shutting down the OpenTelemetry SDK failed: ${describeError(error)}`),
    );
    return this.shutdownPromise;
  }
}

function withTimeout(promise: Promise<void>, ms = SHUTDOWN_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * npm, npx, yarn, pnpm and corepack run on Node.js too, so NODE_OPTIONS puts register into `npm start` itself, which
 * would take the metrics port before the app it starts.
 */
const PACKAGE_MANAGER =
  /[\\/](?:npm|npx|yarn|yarnpkg|pnpm|pnpx|corepack)$|[\\/](?:npm|npx)-cli\.js$|[\\/]node_modules[\\/](?:npm|pnpm|yarn|corepack)[\\/]|[\\/]\.yarn[\\/]releases[\\/]|[\\/](?:yarn|pnpm)\.c?js$/;

function main(): void {
  // Node runs --require preloads in the ESM loader's thread too, and in every Worker: register the app's main thread
  // only (a second registration there would only warn, or start a second SDK on the same port).
  if (!isMainThread) return;
  if (PACKAGE_MANAGER.test(process.argv[1] ?? '')) return;
  const globals = globalThis as Globals;
  if (globals[REGISTRATION_KEY]) return; // both --require and --import, or two copies of forkwatch
  let say: (line: string) => void = writeStderr;
  let registration: Registration | undefined;
  try {
    const env = readRegisterEnv(process.env);
    const quiet = LEVEL[env.logLevel] < LEVEL.warn;
    say = line => {
      if (!quiet) writeStderr(`forkwatch: ${line}`);
    };
    for (const line of env.diagnostics) say(line);
    registration = new Registration(env, say);
    globals[REGISTRATION_KEY] = registration;
    registration.start();
  } catch (error) {
    registration?.fail();
    say(`forkwatch/register failed (${describeError(error)}); the app runs uninstrumented`);
  }
}

main();
