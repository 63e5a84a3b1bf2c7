/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The OpenTelemetry SDK that forkwatch/register starts when the app runs none: a MeterProvider, and a TracerProvider
 * and LoggerProvider when asked for, built from the light SDK packages (no @opentelemetry/sdk-node) and configured
 * from the same OTEL_* variables NodeSDK reads.
 *
 * It runs on either OpenTelemetry JS line forkwatch's ranges take (otel-line.ts): the app's own copies, 2.x or 3.x.
 * The tracing SDK, the logs SDK and the OTLP and Zipkin exporters are optional peer dependencies: they are loaded
 * only when a variable asks for them, and one missing gives one stderr line naming the package to install, at the
 * version of the app's line; every other signal is set up regardless.
 */
import { context, diag, propagation, trace, type TextMapPropagator } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { IMetricReader, MeterProvider, PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { LogsExporterName, TracesExporterName } from './env-config';
import { envList, envPositive, envString } from './otel-env';
import { type OptionalPeer, peerInstallHint } from './otel-line';
import type {
  LoggerProviderLike,
  LogRecordExporterLike,
  OptionalPeerModule,
  TracerProviderLike,
} from '../shared/internal-types';
import { SDK_TRACE_BASE_PACKAGE, SDK_TRACE_PACKAGE, type TracingSdk, tracingSdkOf } from './register-tracing';

type SdkMetrics = typeof import('@opentelemetry/sdk-metrics');
type Core = typeof import('@opentelemetry/core');
type Resources = typeof import('@opentelemetry/resources');
type ApiLogs = typeof import('@opentelemetry/api-logs');

/** The OTLP exporter package for each protocol, per signal, as NodeSDK picks them. */
const OTLP_PACKAGES = {
  metrics: {
    grpc: '@opentelemetry/exporter-metrics-otlp-grpc',
    'http/json': '@opentelemetry/exporter-metrics-otlp-http',
    'http/protobuf': '@opentelemetry/exporter-metrics-otlp-proto',
  },
  traces: {
    grpc: '@opentelemetry/exporter-trace-otlp-grpc',
    'http/json': '@opentelemetry/exporter-trace-otlp-http',
    'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
  },
  logs: {
    grpc: '@opentelemetry/exporter-logs-otlp-grpc',
    'http/json': '@opentelemetry/exporter-logs-otlp-http',
    'http/protobuf': '@opentelemetry/exporter-logs-otlp-proto',
  },
} as const;
type Signal = keyof typeof OTLP_PACKAGES;
type OtlpProtocol = keyof (typeof OTLP_PACKAGES)['metrics'];
const ZIPKIN_PACKAGE = '@opentelemetry/exporter-zipkin';
const SDK_LOGS_PACKAGE = '@opentelemetry/sdk-logs';
/** The logs API of the 2.x line; on the 3.x line @opentelemetry/api (1.10) carries `logs` itself. */
const API_LOGS_PACKAGE = '@opentelemetry/api-logs';

const RESOURCE_DETECTORS = ['env', 'host', 'os', 'process', 'serviceinstance'] as const;
const DEFAULT_RESOURCE_DETECTORS = ['env', 'process', 'host'] as const;
/**
 * What the process detector reads from the command line: its arguments carry tokens as often as not
 * (`--api-token=…`), and `/metrics` shows them to whoever reaches it (`target_info`). Left out unless
 * FORKWATCH_RESOURCE_COMMAND_LINE=true; the other detectors read no argument and no environment variable but
 * OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, which the user sets for the purpose.
 */
export const COMMAND_LINE_ATTRIBUTES = ['process.command_args', 'process.command', 'process.command_line'] as const;

export interface SdkSettings {
  metricReaders: IMetricReader[];
  tracesExporters: TracesExporterName[];
  logsExporters: LogsExporterName[];
  /** Someone registered these already (without providers): keep theirs. */
  keepContextManager: boolean;
  keepPropagator: boolean;
  /** FORKWATCH_RESOURCE_COMMAND_LINE: keep the process detector's command line in the resource. */
  keepCommandLine?: boolean;
  say(line: string): void;
}

export interface StartedSdk {
  readonly resource: Resource;
  readonly meterProvider: MeterProvider | undefined;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export function otlpProtocol(signal: Signal): OtlpProtocol {
  const protocol =
    envString(`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_PROTOCOL`) ?? envString('OTEL_EXPORTER_OTLP_PROTOCOL');
  if (protocol === undefined) return 'http/protobuf';
  if (protocol in OTLP_PACKAGES[signal]) return protocol as OtlpProtocol;
  diag.warn(`Unsupported OTLP ${signal} protocol: "${protocol}". Using http/protobuf.`);
  return 'http/protobuf';
}

/**
 * Loads an optional peer dependency from the app's node_modules; undefined (and one line naming the package and the
 * version of the app's OpenTelemetry line to install) when it is not installed.
 */
export function loadOptionalPeer<T extends OptionalPeerModule>(
  name: OptionalPeer,
  wantedBy: string,
  say: (line: string) => void,
): T | undefined {
  const peer = installedPeer<T>(name);
  if (!peer)
    say(`${wantedBy} needs ${name}, which is not installed: run \`npm install ${peerInstallHint(name)}\`; left out`);
  return peer;
}

/** An optional peer if installed, else undefined; any other error loading it is thrown. */
function installedPeer<T extends OptionalPeerModule>(name: OptionalPeer): T | undefined {
  try {
    return require(name) as T;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return undefined;
  }
}

export function periodicReader(exporter: PushMetricExporter): IMetricReader {
  const { PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics') as SdkMetrics;
  const interval = envPositive('OTEL_METRIC_EXPORT_INTERVAL') ?? 60_000;
  const timeout = envPositive('OTEL_METRIC_EXPORT_TIMEOUT') ?? 30_000;
  return new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: interval,
    exportTimeoutMillis: Math.min(timeout, interval),
  });
}

/** OTEL_METRICS_EXPORTER=otlp: the OTLP metric exporter of the configured protocol, when its package is installed. */
export function otlpMetricReader(say: (line: string) => void): IMetricReader | undefined {
  const protocol = otlpProtocol('metrics');
  const peer = loadOptionalPeer<{ OTLPMetricExporter: new () => PushMetricExporter }>(
    OTLP_PACKAGES.metrics[protocol],
    `OTEL_METRICS_EXPORTER=otlp (${protocol})`,
    say,
  );
  return peer && periodicReader(new peer.OTLPMetricExporter());
}

/**
 * The resource NodeSDK would build, from the app's own @opentelemetry/resources (2.x and 3.x share this API):
 * synchronous `detectResources` over the detectors OTEL_NODE_RESOURCE_DETECTORS names, merged into
 * `defaultResource()`.
 */
function detectResource(keepCommandLine: boolean): Resource {
  const resources = require('@opentelemetry/resources') as Resources;
  const byName = {
    env: resources.envDetector,
    host: resources.hostDetector,
    os: resources.osDetector,
    process: keepCommandLine ? resources.processDetector : withoutCommandLine(resources.processDetector),
    serviceinstance: resources.serviceInstanceIdDetector,
  };
  const requested = envList('OTEL_NODE_RESOURCE_DETECTORS');
  let names: readonly string[] = DEFAULT_RESOURCE_DETECTORS;
  if (requested?.includes('all')) names = RESOURCE_DETECTORS;
  else if (requested?.includes('none')) names = [];
  else if (requested) names = requested;
  const chosen = names.flatMap(name => {
    const found = byName[name as keyof typeof byName];
    if (!found)
      diag.warn(
        `Invalid resource detector "${name}" specified in the environment variable OTEL_NODE_RESOURCE_DETECTORS`,
      );
    return found ? [found] : [];
  });
  return resources.defaultResource().merge(resources.detectResources({ detectors: chosen }));
}

type ResourceDetector = Resources['processDetector'];

/** The detector, minus the attributes that repeat the command line. */
function withoutCommandLine(detector: ResourceDetector): ResourceDetector {
  return {
    detect(config) {
      const detected = detector.detect(config);
      const attributes = { ...detected.attributes };
      for (const name of COMMAND_LINE_ATTRIBUTES) delete attributes[name];
      return { ...detected, attributes };
    },
  };
}

/** OTEL_PROPAGATORS, for the W3C propagators @opentelemetry/core carries (b3 and jaeger would need more packages). */
function propagatorFromEnv(say: (line: string) => void): TextMapPropagator | undefined {
  const { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } =
    require('@opentelemetry/core') as Core;
  const names = [...new Set(envList('OTEL_PROPAGATORS') ?? ['tracecontext', 'baggage'])];
  if (names.includes('none')) return undefined;
  const propagators = names.flatMap(name => {
    if (name === 'tracecontext') return [new W3CTraceContextPropagator()];
    if (name === 'baggage') return [new W3CBaggagePropagator()];
    say(
      `OTEL_PROPAGATORS: "${name}" is not available under forkwatch/register (tracecontext and baggage are); left out`,
    );
    return [];
  });
  return propagators.length === 0 ? undefined : new CompositePropagator({ propagators });
}

/**
 * The tracing SDK (register-tracing.ts): the 2.x line's sdk-trace-base where installed, else sdk-trace (2.9 and
 * later, and the only one on 3.x). Undefined, with one line, when neither is installed.
 */
function tracingSdk(settings: SdkSettings): TracingSdk | undefined {
  const base = installedPeer(SDK_TRACE_BASE_PACKAGE);
  if (base) return tracingSdkOf(base, SDK_TRACE_BASE_PACKAGE);
  const wantedBy = `OTEL_TRACES_EXPORTER=${settings.tracesExporters.join(',')}`;
  const sdk = loadOptionalPeer(SDK_TRACE_PACKAGE, wantedBy, settings.say);
  return sdk && tracingSdkOf(sdk, SDK_TRACE_PACKAGE);
}

function spanProcessors(settings: SdkSettings, sdk: TracingSdk, stderrProcessor: () => SpanProcessor): SpanProcessor[] {
  const processors: SpanProcessor[] = [];
  for (const name of settings.tracesExporters) {
    if (name === 'console') {
      processors.push(stderrProcessor());
      continue;
    }
    let exporter: SpanExporter | undefined;
    if (name === 'zipkin') {
      const peer = loadOptionalPeer<{ ZipkinExporter: new () => SpanExporter }>(
        ZIPKIN_PACKAGE,
        'OTEL_TRACES_EXPORTER=zipkin',
        settings.say,
      );
      exporter = peer && new peer.ZipkinExporter();
    } else {
      const protocol = otlpProtocol('traces');
      const peer = loadOptionalPeer<{ OTLPTraceExporter: new () => SpanExporter }>(
        OTLP_PACKAGES.traces[protocol],
        `OTEL_TRACES_EXPORTER=otlp (${protocol})`,
        settings.say,
      );
      exporter = peer && new peer.OTLPTraceExporter();
    }
    if (exporter) processors.push(sdk.batchProcessor(exporter));
  }
  return processors;
}

function loggerProvider(settings: SdkSettings, resource: Resource): LoggerProviderLike | undefined {
  if (!settings.logsExporters.includes('otlp')) return undefined;
  const protocol = otlpProtocol('logs');
  const wantedBy = `OTEL_LOGS_EXPORTER=otlp (${protocol})`;
  const sdkLogs = loadOptionalPeer<{
    LoggerProvider: new (config: { resource: Resource; processors: unknown[] }) => LoggerProviderLike;
    BatchLogRecordProcessor: new (config: { exporter: LogRecordExporterLike }) => unknown;
  }>(SDK_LOGS_PACKAGE, wantedBy, settings.say);
  const peer = loadOptionalPeer<{ OTLPLogExporter: new () => LogRecordExporterLike }>(
    OTLP_PACKAGES.logs[protocol],
    wantedBy,
    settings.say,
  );
  if (!sdkLogs || !peer) return undefined;
  const processor = new sdkLogs.BatchLogRecordProcessor({ exporter: new peer.OTLPLogExporter() });
  const provider = new sdkLogs.LoggerProvider({ resource, processors: [processor] });
  const { logs } = require('@opentelemetry/api') as { logs?: ApiLogs['logs'] };
  const logsApi = logs ?? loadOptionalPeer<ApiLogs>(API_LOGS_PACKAGE, wantedBy, settings.say)?.logs;
  logsApi?.setGlobalLoggerProvider(provider as never);
  return provider;
}

/** Registers context manager, propagator and providers globally, as NodeSDK.start() does. */
export function startSdk(settings: SdkSettings, stderrProcessor: () => SpanProcessor): StartedSdk {
  if (!settings.keepContextManager) {
    const { AsyncLocalStorageContextManager } =
      require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  if (!settings.keepPropagator) {
    const propagator = propagatorFromEnv(settings.say);
    if (propagator) propagation.setGlobalPropagator(propagator);
  }
  const resource = detectResource(settings.keepCommandLine === true);

  let meterProvider: MeterProvider | undefined;
  if (settings.metricReaders.length > 0) {
    const { MeterProvider } = require('@opentelemetry/sdk-metrics') as SdkMetrics;
    meterProvider = new MeterProvider({ resource, readers: settings.metricReaders });
    const { metrics } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
    metrics.setGlobalMeterProvider(meterProvider);
  }

  let tracerProvider: TracerProviderLike | undefined;
  const tracing = settings.tracesExporters.length > 0 ? tracingSdk(settings) : undefined;
  const processors = tracing ? spanProcessors(settings, tracing, stderrProcessor) : [];
  if (tracing && processors.length > 0) {
    tracerProvider = tracing.provider(resource, processors);
    trace.setGlobalTracerProvider(tracerProvider);
  }

  const logger = loggerProvider(settings, resource);
  const providers = [meterProvider, tracerProvider, logger].filter(p => p !== undefined);
  return {
    resource,
    meterProvider,
    flush: () => Promise.all(providers.map(p => p.forceFlush())).then(() => undefined),
    shutdown: () => Promise.all(providers.map(p => p.shutdown())).then(() => undefined),
  };
}
