/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The tracing SDK register builds its TracerProvider from, on either OpenTelemetry JS line:
 * - @opentelemetry/sdk-trace-base (2.x): `BasicTracerProvider` and `BatchSpanProcessor(exporter)` read
 *   OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_* and the span limits themselves, as NodeSDK relies on;
 * - @opentelemetry/sdk-trace (2.9 and later, the only one on 3.x): `TracerProvider` and
 *   `BatchSpanProcessor({ exporter })` read no variable (3.x moved that into sdk-node), so the sampler and the batch
 *   settings are read here, by the same rules. Span limits stay at the SDK's defaults there.
 */
import { diag, type Sampler } from '@opentelemetry/api';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { envPositive, envString } from './otel-env';
import type { TracerProviderLike } from '../shared/internal-types';

type ProviderClass = new (config: {
  resource: unknown;
  spanProcessors: SpanProcessor[];
  sampler?: Sampler;
}) => TracerProviderLike;

/** @opentelemetry/sdk-trace-base (2.x). */
interface SdkTraceBase {
  BasicTracerProvider: ProviderClass;
  BatchSpanProcessor: new (exporter: SpanExporter) => SpanProcessor;
}

/** @opentelemetry/sdk-trace (2.9+, 3.x). */
interface SdkTrace {
  TracerProvider: ProviderClass;
  BatchSpanProcessor: new (options: { exporter: SpanExporter } & BatchOptions) => SpanProcessor;
  AlwaysOnSampler: new () => Sampler;
  AlwaysOffSampler: new () => Sampler;
  TraceIdRatioBasedSampler: new (ratio: number) => Sampler;
  ParentBasedSampler: new (config: { root: Sampler }) => Sampler;
}

interface BatchOptions {
  maxQueueSize?: number;
  maxExportBatchSize?: number;
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
}

export const SDK_TRACE_BASE_PACKAGE = '@opentelemetry/sdk-trace-base';
export const SDK_TRACE_PACKAGE = '@opentelemetry/sdk-trace';

/** What register needs of a tracing SDK, whichever package it is. */
export interface TracingSdk {
  readonly packageName: typeof SDK_TRACE_BASE_PACKAGE | typeof SDK_TRACE_PACKAGE;
  batchProcessor(exporter: SpanExporter): SpanProcessor;
  provider(resource: unknown, spanProcessors: SpanProcessor[]): TracerProviderLike;
}

/** sdk-trace-base where installed (it reads the variables itself), else sdk-trace; from the module found. */
export function tracingSdkOf(
  module: object,
  packageName: typeof SDK_TRACE_BASE_PACKAGE | typeof SDK_TRACE_PACKAGE,
): TracingSdk {
  if (packageName === SDK_TRACE_BASE_PACKAGE) {
    const sdk = module as SdkTraceBase;
    return {
      packageName,
      batchProcessor: exporter => new sdk.BatchSpanProcessor(exporter),
      provider: (resource, spanProcessors) => new sdk.BasicTracerProvider({ resource, spanProcessors }),
    };
  }
  const sdk = module as SdkTrace;
  return {
    packageName,
    batchProcessor: exporter => new sdk.BatchSpanProcessor({ exporter, ...batchOptionsFromEnv() }),
    provider: (resource, spanProcessors) =>
      new sdk.TracerProvider({ resource, spanProcessors, sampler: samplerFromEnv(sdk) }),
  };
}

/** OTEL_BSP_*, as sdk-trace-base 2.x reads them (undefined leaves the SDK's default). */
export function batchOptionsFromEnv(): BatchOptions {
  const options: BatchOptions = {
    maxQueueSize: envPositive('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: envPositive('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
    scheduledDelayMillis: envPositive('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: envPositive('OTEL_BSP_EXPORT_TIMEOUT'),
  };
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}

/** The sampler ratio of OTEL_TRACES_SAMPLER_ARG: a number in [0, 1], else 1 (with a warning). */
function ratioFromEnv(): number {
  const raw = envString('OTEL_TRACES_SAMPLER_ARG');
  if (raw === undefined) return 1;
  const ratio = Number(raw);
  if (Number.isFinite(ratio) && ratio >= 0 && ratio <= 1) return ratio;
  diag.warn(`OTEL_TRACES_SAMPLER_ARG=${raw} was given, but it is out of range ([0..1]), defaulting to 1.`);
  return 1;
}

/** OTEL_TRACES_SAMPLER(_ARG), by the specification's names; parentbased_always_on when unset or unknown. */
export function samplerFromEnv(sdk: SdkTrace): Sampler {
  const name = envString('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(ratioFromEnv());
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratioFromEnv()) });
    case 'parentbased_always_on':
      break;
    default:
      diag.warn(`OTEL_TRACES_SAMPLER value "${name}" invalid, defaulting to "parentbased_always_on".`);
  }
  return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
}
