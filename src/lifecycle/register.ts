/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
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
 *  5. on SIGTERM/SIGINT (and once when the event loop runs dry) it flushes and shuts down what it started.
 *
 * Read as a script, main() at the bottom: environment (env-config.ts) → registration (this file: instrumentation,
 * then the SDK decision) → SDK (register-sdk.ts, with its exporters in register-exporters.ts) → shutdown
 * (register-shutdown.ts). What prom-client reads of it is the contract in registration.ts.
 *
 * It never writes to stdout (an stdio MCP server's stdout is its protocol stream) and never throws into the app: a bad
 * setting or a busy port gives one diagnostic on stderr and the app keeps running, uninstrumented if need be.
 */
import type { MeterProvider as ApiMeterProvider } from '@opentelemetry/api';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { Server } from 'node:http';
import { setInterval, setTimeout } from 'node:timers';
import { isMainThread } from 'node:worker_threads';
import { type LogLevelName, type RegisterEnvConfig, readRegisterEnv } from './env-config';
import type { ForkwatchInstrumentation } from './instrumentation';
import type { ForkwatchMetricReader } from './prom-client';
import { createMetricExporters, describeError, servePrometheus } from './register-exporters';
import type { StartedSdk } from './register-sdk';
import { installEsmLoader } from './esm-loader';
import { holdDiagnostics, releaseDiagnostics } from './held-diagnostics';
import { installExitHandlers, withTimeout } from './register-shutdown';
import { StderrDiagLogger, StderrSpanProcessor, writeStderr } from './register-stderr';
import { type ForkwatchRegistration, REGISTRATION_KEY } from './registration';

const OTEL_API_KEY = Symbol.for('opentelemetry.js.api.1');
/** The longest a scrape of the Prometheus endpoint waits for resource detection. */
const RESOURCE_TIMEOUT_MS = 2_000;
/** How often, when the app runs its own SDK, register looks whether the global MeterProvider changed. */
const FOLLOW_INTERVAL_MS = 500;

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

// ---------------------------------------------------------------------------------------------------------------

class Registration implements ForkwatchRegistration {
  mode: ForkwatchRegistration['mode'] = 'pending';
  instrumentation: ForkwatchInstrumentation | undefined;
  promClientReader: ForkwatchMetricReader | undefined;
  private readonly decided: Promise<void>;
  private markReady!: () => void;
  /** The timer that decides (unref'd: see start()). */
  private decision: ReturnType<typeof setTimeout> | undefined;
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
    this.decided = new Promise(resolve => (this.markReady = resolve));
  }

  /** Whoever waits for the decision (forkwatch/prom-client) keeps the process alive until it is taken. */
  get ready(): Promise<void> {
    this.decision?.ref();
    return this.decided;
  }

  /** Something threw while setting up: the app runs on, without forkwatch's exporters. */
  fail(): void {
    this.mode = 'failed';
    releaseDiagnostics();
    this.markReady();
  }

  start(): void {
    if (this.env.sdkDisabled) {
      this.mode = 'disabled';
      this.markReady();
      return;
    }
    // Loaded before the ESM loader hooks go in: with synchronous hooks every require() after them goes through the
    // hooks too, and these are forkwatch's own modules and @opentelemetry/instrumentation's, none of them the app's.
    const { ForkwatchInstrumentation } = require('./instrumentation') as typeof import('./instrumentation');
    // Until decide() set up a logger, what forkwatch says is held: with synchronous loader hooks an ESM app's
    // modules load, and are patched, before that.
    holdDiagnostics();
    // Enabled by its constructor: the require hooks and the require.cache scan are in place from here on.
    this.instrumentation = new ForkwatchInstrumentation({ ...this.env.instrumentation });
    // Before the app's first import, which is what they are for.
    this.installEsmHook();
    // On the event loop's first turn a CommonJS main module (`--require`) has run its top level, and every --require
    // preload has run: an SDK the app starts there is seen. ESM main modules run later, after their imports load; an
    // ESM app that starts its own SDK sets FORKWATCH_START_SDK=false (and is told so if it does not).
    //
    // The decision does not keep the process alive (issue 50): a process whose event loop has nothing to wait for
    // after its main module (a CLI's `--version`, `node -e`, a shim that execs another program) did no I/O, so no MCP
    // exchange either, and ends without starting an SDK and its Prometheus listener, about 100 ms of CPU. An unref'd
    // timer, not an unref'd immediate: libuv's poll wakes for every timer, ref'd or not, so in a process that waits
    // for anything (a socket, a timer, a file) it fires on the first turn, before the poll phase, where an unref'd
    // immediate would wait for the first I/O event. What was said meanwhile is written at exit instead
    // (sayHeldAtExit), and `ready` keeps the process alive for whoever awaits it.
    this.decision = setTimeout(() => this.decide(), 0);
    this.decision.unref();
    process.once('exit', this.sayHeldAtExit);
  }

  /** The process ends before decide() ran: what forkwatch held is said where decide() would have sent it. */
  private readonly sayHeldAtExit = (): void => {
    if (this.mode !== 'pending') return;
    try {
      if (this.wouldStartSdk()) this.installDiagLogger();
    } finally {
      releaseDiagnostics();
    }
  };

  /** Whether decide() starts an SDK: none of the app's is registered, and FORKWATCH_START_SDK allows it. */
  private wouldStartSdk(globals = otelGlobals()): boolean {
    return this.env.startSdk && !globals.trace && !globals.metrics;
  }

  /** The OpenTelemetry diag logger of the SDK register starts: stderr, at OTEL_LOG_LEVEL. */
  private installDiagLogger(): void {
    const { diag } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
    diag.setLogger(new StderrDiagLogger(message => this.onOtelError(message)), {
      logLevel: LEVEL[this.env.logLevel],
      suppressOverrideMessage: true,
    });
  }

  private installEsmHook(): void {
    try {
      const how = installEsmLoader();
      if (how === 'none')
        this.say(
          'this Node.js cannot register ESM loader hooks (module.register, Node >= 20.6): ESM code is not instrumented',
        );
    } catch (error) {
      this.say(`could not register the ESM loader hooks (${describeError(error)}): ESM code is not instrumented`);
    }
  }

  private decide(): void {
    this.decision = undefined;
    process.removeListener('exit', this.sayHeldAtExit);
    try {
      const globals = otelGlobals();
      if (!this.wouldStartSdk(globals)) {
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
      releaseDiagnostics();
      this.markReady();
    }
  }

  private startSdk(contextRegistered: boolean, propagatorRegistered: boolean): void {
    this.installDiagLogger();
    const { startSdk } = require('./register-sdk') as typeof import('./register-sdk');
    const exporters = createMetricExporters(this.env, this.say);
    this.prometheus = exporters.prometheus;
    this.promClientReader = exporters.promClientReader;
    const sdk = startSdk(
      {
        metricReaders: exporters.readers,
        tracesExporters: this.env.tracesExporters,
        logsExporters: this.env.logsExporters,
        keepContextManager: contextRegistered,
        keepPropagator: propagatorRegistered,
        keepCommandLine: this.env.resourceCommandLine,
        say: this.say,
      },
      () => new StderrSpanProcessor(),
    );
    this.sdk = sdk;
    installExitHandlers(
      () => this.shutdown(),
      () => this.flush(),
    );
    this.applyMeterProvider();
    if (this.prometheus) {
      // The Prometheus exporter reads the resource without waiting for the detectors' async attributes (host.id),
      // and logs an error on every scrape that comes before they settle: scrapes wait for them (bounded).
      const settled = Promise.resolve(sdk.resource.waitForAsyncAttributes?.()).catch(() => undefined);
      const resourceSettled = () => withTimeout(settled, RESOURCE_TIMEOUT_MS).catch(() => undefined);
      this.prometheusServer = servePrometheus(this.prometheus, this.env.prometheus, resourceSettled, this.say);
    }
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
