/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The environment of `forkwatch/register`, read in one pure function: forkwatch's own FORKWATCH_* settings and the
 * OTEL_* variables that register interprets itself (the rest is left to NodeSDK, which reads them as usual).
 *
 * Every value that cannot be used yields exactly one diagnostic line and its default: a typo in a deployment must
 * never take the application down, and must never pass silently either.
 */
import { BUILTIN_CODEC_NAMES, type BuiltinCodecName } from '../core/codecs';
import {
  DEFAULT_DELIVERY_WINDOW_MS,
  DEFAULT_LEDGER_LIMITS,
  DEFAULT_MAX_TRACKED,
  DEFAULT_REISSUE_WINDOW_MS,
  type LedgerLimits,
} from '../core/defaults';
import type { OnForkMode } from '../shared/types';

export type Env = Readonly<Record<string, string | undefined>>;

export const METRICS_EXPORTERS = ['prometheus', 'otlp', 'console'] as const;
export type MetricsExporterName = (typeof METRICS_EXPORTERS)[number];
export const TRACES_EXPORTERS = ['otlp', 'zipkin', 'console'] as const;
export type TracesExporterName = (typeof TRACES_EXPORTERS)[number];
/** `console` is not offered for logs: NodeSDK's console log exporter writes to stdout (see readLogsExporters). */
export const LOGS_EXPORTERS = ['otlp'] as const;
export type LogsExporterName = (typeof LOGS_EXPORTERS)[number];

export const LOG_LEVELS = ['none', 'error', 'warn', 'info', 'debug', 'verbose', 'all'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

export const DEFAULT_PROMETHEUS_PORT = 9464;
export const DEFAULT_VERDICT_TIMEOUT_MS = 10_000;
/** setTimeout() fires at once for delays above 2^31 - 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The instrumentation settings that can come from the environment (hooks, custom codecs and `fleetDelivery` cannot:
 * the fleet's delivery marks are an object over the app's own store client, handed in code; issue 49).
 */
export interface EnvInstrumentationConfig {
  onFork?: OnForkMode;
  captureEventIds?: boolean;
  captureRawSessionId?: boolean;
  codec?: BuiltinCodecName;
  verdictTimeoutMs?: number;
  ledger?: Partial<LedgerLimits>;
  observeFetch?: boolean;
  propagateContext?: boolean;
  deliveryWindowMs?: number;
  sharedEventStore?: boolean;
  perRequest?: { reissueWindowMs?: number; maxTracked?: number; balancerHidesCloses?: boolean };
}

export interface RegisterEnvConfig {
  /** OTEL_SDK_DISABLED=true: register does nothing at all. */
  sdkDisabled: boolean;
  /** FORKWATCH_START_SDK: false means never start a NodeSDK, only report through providers the app registers. */
  startSdk: boolean;
  /** FORKWATCH_RESOURCE_COMMAND_LINE: the resource keeps the command line (process.command_args, …). */
  resourceCommandLine: boolean;
  /** Only the keys that were set (and valid) in the environment: the instrumentation's defaults stay in one place. */
  instrumentation: EnvInstrumentationConfig;
  /** Empty: no metrics exporter (`none`). */
  metricsExporters: MetricsExporterName[];
  /** Empty: no tracer provider (`none`). */
  tracesExporters: TracesExporterName[];
  /** Empty: no logger provider (`none`). */
  logsExporters: LogsExporterName[];
  prometheus: { host: string | undefined; port: number };
  logLevel: LogLevelName;
  /** One line per unusable value, ready to print. */
  diagnostics: string[];
}

export const FORKWATCH_ENV = {
  onFork: 'FORKWATCH_ON_FORK',
  captureEventIds: 'FORKWATCH_CAPTURE_EVENT_IDS',
  captureRawSessionId: 'FORKWATCH_CAPTURE_RAW_SESSION_ID',
  codec: 'FORKWATCH_CODEC',
  verdictTimeoutMs: 'FORKWATCH_VERDICT_TIMEOUT_MS',
  ledgerMaxSessions: 'FORKWATCH_LEDGER_MAX_SESSIONS',
  ledgerMaxIdleMs: 'FORKWATCH_LEDGER_MAX_IDLE_MS',
  ledgerRecentIds: 'FORKWATCH_LEDGER_RECENT_IDS',
  propagateContext: 'FORKWATCH_PROPAGATE_CONTEXT',
  observeFetch: 'FORKWATCH_OBSERVE_FETCH',
  deliveryWindowMs: 'FORKWATCH_DELIVERY_WINDOW_MS',
  sharedEventStore: 'FORKWATCH_SHARED_EVENT_STORE',
  perRequestReissueWindowMs: 'FORKWATCH_PER_REQUEST_REISSUE_WINDOW_MS',
  perRequestMaxTracked: 'FORKWATCH_PER_REQUEST_MAX_TRACKED',
  perRequestBalancerHidesCloses: 'FORKWATCH_PER_REQUEST_BALANCER_HIDES_CLOSES',
  startSdk: 'FORKWATCH_START_SDK',
  resourceCommandLine: 'FORKWATCH_RESOURCE_COMMAND_LINE',
} as const;

export function readRegisterEnv(env: Env): RegisterEnvConfig {
  const diagnostics: string[] = [];
  const r = new Reader(env, diagnostics);

  const instrumentation: EnvInstrumentationConfig = {};
  const onFork = r.oneOf(FORKWATCH_ENV.onFork, ['record', 'abort'] as const, 'record');
  if (onFork !== undefined) instrumentation.onFork = onFork;
  const captureEventIds = r.bool(FORKWATCH_ENV.captureEventIds, true);
  if (captureEventIds !== undefined) instrumentation.captureEventIds = captureEventIds;
  const captureRawSessionId = r.bool(FORKWATCH_ENV.captureRawSessionId, false);
  if (captureRawSessionId !== undefined) instrumentation.captureRawSessionId = captureRawSessionId;
  const codec = r.oneOf(FORKWATCH_ENV.codec, BUILTIN_CODEC_NAMES, 'auto');
  if (codec !== undefined) instrumentation.codec = codec;
  const verdictTimeoutMs = r.int(FORKWATCH_ENV.verdictTimeoutMs, 1, MAX_TIMER_MS, DEFAULT_VERDICT_TIMEOUT_MS);
  if (verdictTimeoutMs !== undefined) instrumentation.verdictTimeoutMs = verdictTimeoutMs;
  const ledger: Partial<LedgerLimits> = {};
  const maxSessions = r.int(FORKWATCH_ENV.ledgerMaxSessions, 1, 10_000_000, DEFAULT_LEDGER_LIMITS.maxSessions);
  if (maxSessions !== undefined) ledger.maxSessions = maxSessions;
  const maxIdleMs = r.int(FORKWATCH_ENV.ledgerMaxIdleMs, 1, Number.MAX_SAFE_INTEGER, DEFAULT_LEDGER_LIMITS.maxIdleMs);
  if (maxIdleMs !== undefined) ledger.maxIdleMs = maxIdleMs;
  // Each tracked session holds this many ids: keep a typo from allocating gigabytes.
  const recentIds = r.int(FORKWATCH_ENV.ledgerRecentIds, 1, 10_000, DEFAULT_LEDGER_LIMITS.recentIds);
  if (recentIds !== undefined) ledger.recentIds = recentIds;
  if (Object.keys(ledger).length > 0) instrumentation.ledger = ledger;
  const propagateContext = r.bool(FORKWATCH_ENV.propagateContext, true);
  if (propagateContext !== undefined) instrumentation.propagateContext = propagateContext;
  const observeFetch = r.bool(FORKWATCH_ENV.observeFetch, true);
  if (observeFetch !== undefined) instrumentation.observeFetch = observeFetch;
  const deliveryWindowMs = r.int(
    FORKWATCH_ENV.deliveryWindowMs,
    0,
    Number.MAX_SAFE_INTEGER,
    DEFAULT_DELIVERY_WINDOW_MS,
  );
  if (deliveryWindowMs !== undefined) instrumentation.deliveryWindowMs = deliveryWindowMs;
  const sharedEventStore = r.bool(FORKWATCH_ENV.sharedEventStore, false);
  if (sharedEventStore !== undefined) instrumentation.sharedEventStore = sharedEventStore;
  const perRequest: { reissueWindowMs?: number; maxTracked?: number; balancerHidesCloses?: boolean } = {};
  const reissueWindowMs = r.int(
    FORKWATCH_ENV.perRequestReissueWindowMs,
    0,
    Number.MAX_SAFE_INTEGER,
    DEFAULT_REISSUE_WINDOW_MS,
  );
  if (reissueWindowMs !== undefined) perRequest.reissueWindowMs = reissueWindowMs;
  // Each of the three bounded tables holds up to this many entries: keep a typo from taking the heap.
  const maxTracked = r.int(FORKWATCH_ENV.perRequestMaxTracked, 1, 10_000_000, DEFAULT_MAX_TRACKED);
  if (maxTracked !== undefined) perRequest.maxTracked = maxTracked;
  const hidesCloses = r.bool(FORKWATCH_ENV.perRequestBalancerHidesCloses, false);
  if (hidesCloses !== undefined) perRequest.balancerHidesCloses = hidesCloses;
  if (Object.keys(perRequest).length > 0) instrumentation.perRequest = perRequest;

  const otlpEndpoint = (signal: string) =>
    r.present('OTEL_EXPORTER_OTLP_ENDPOINT') || r.present(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`);

  return {
    sdkDisabled: r.bool('OTEL_SDK_DISABLED', false) === true,
    startSdk: r.bool(FORKWATCH_ENV.startSdk, true) !== false,
    resourceCommandLine: r.bool(FORKWATCH_ENV.resourceCommandLine, false) === true,
    instrumentation,
    metricsExporters: r.exporterList('OTEL_METRICS_EXPORTER', METRICS_EXPORTERS, ['prometheus']),
    // forkwatch's output is its metrics: spans and logs are opt-in, so an app with no Collector nearby does not
    // log a failed export every few seconds. An OTLP endpoint in the environment counts as opting in.
    tracesExporters: r.exporterList('OTEL_TRACES_EXPORTER', TRACES_EXPORTERS, otlpEndpoint('TRACES') ? ['otlp'] : []),
    // NodeSDK's console log exporter writes to stdout, which would corrupt an stdio MCP server's protocol stream.
    logsExporters: r.exporterList('OTEL_LOGS_EXPORTER', LOGS_EXPORTERS, otlpEndpoint('LOGS') ? ['otlp'] : [], {
      console: 'the console log exporter writes to stdout, which forkwatch/register never does',
    }),
    prometheus: {
      host: r.string('OTEL_EXPORTER_PROMETHEUS_HOST'),
      port: r.int('OTEL_EXPORTER_PROMETHEUS_PORT', 1, 65_535, DEFAULT_PROMETHEUS_PORT) ?? DEFAULT_PROMETHEUS_PORT,
    },
    logLevel: r.oneOf('OTEL_LOG_LEVEL', LOG_LEVELS, 'warn') ?? 'warn',
    diagnostics,
  };
}

/** Reads single variables; a variable that is unset or empty (after trimming) counts as unset, as OTel specifies. */
class Reader {
  constructor(
    private readonly env: Env,
    private readonly diagnostics: string[],
  ) {}

  report(line: string): void {
    this.diagnostics.push(line);
  }

  present(name: string): boolean {
    return this.string(name) !== undefined;
  }

  string(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value ? value : undefined;
  }

  list(raw: string): string[] {
    return raw
      .split(',')
      .map(s => s.trim().toLowerCase())
      .filter(s => s !== '');
  }

  bool(name: string, fallback: boolean): boolean | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const value = raw.toLowerCase();
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    this.report(`${name}=${JSON.stringify(raw)} is not a boolean (true or false); using ${fallback}`);
    return undefined;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const value = raw.toLowerCase() as T;
    if (allowed.includes(value)) return value;
    this.report(`${name}=${JSON.stringify(raw)} is not one of ${allowed.join(', ')}; using ${fallback}`);
    return undefined;
  }

  int(name: string, min: number, max: number, fallback: number): number | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const value = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
    if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    this.report(`${name}=${JSON.stringify(raw)} is not ${range}; using ${fallback}`);
    return undefined;
  }

  /**
   * A comma list of exporter names as NodeSDK reads it. `none` anywhere means none. Each unknown (or refused) name
   * is left out with one diagnostic; when nothing usable is left, the fallback is used and the last line says so.
   */
  exporterList<T extends string>(
    name: string,
    allowed: readonly T[],
    fallback: readonly T[],
    refused: Readonly<Record<string, string>> = {},
  ): T[] {
    const raw = this.string(name);
    if (raw === undefined) return [...fallback];
    const names = [...new Set(this.list(raw))];
    if (names.includes('none')) {
      if (names.length > 1)
        this.report(`${name}=${JSON.stringify(raw)} names "none" beside other exporters; using none`);
      return [];
    }
    const valid = names.filter((entry): entry is T => allowed.includes(entry as T));
    const bad = names.filter(entry => !allowed.includes(entry as T));
    bad.forEach((entry, i) => {
      const why = refused[entry] ?? `unknown exporter (known: ${[...allowed, 'none'].join(', ')})`;
      const last = i === bad.length - 1 && valid.length === 0;
      const outcome = last ? `using ${fallback.length > 0 ? fallback.join(', ') : 'none'}` : 'left out';
      this.report(`${name}: ${JSON.stringify(entry)}: ${why}; ${outcome}`);
    });
    return valid.length > 0 ? valid : [...fallback];
  }
}
