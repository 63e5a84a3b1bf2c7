/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch/prom-client: forkwatch's metrics in a prom-client Registry, for services that already expose prom-client's
 * /metrics and do not want a second port.
 *
 *   const { Registry } = require('prom-client');
 *   const { registerForkwatchMetrics } = require('forkwatch/prom-client');
 *   const registry = new Registry();
 *   registerForkwatchMetrics(registry); // with `node --require forkwatch/register`, or pass { instrumentation }
 *
 * The families come out exactly as the OpenTelemetry Prometheus exporter writes them (same names, types, HELP, labels,
 * `otel_scope_name`/`otel_scope_version` labels and buckets): the data is the OpenTelemetry SDK's own, collected by a
 * MetricReader, and only rendered through prom-client. Names come from names.ts; the tests scrape both paths in one
 * process and compare them.
 */
import { type Attributes, metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  type Histogram,
  MeterProvider,
  MetricReader,
  type MetricData,
  type ScopeMetrics,
} from '@opentelemetry/sdk-metrics';
import type { ForkwatchInstrumentation } from './instrumentation';
import { METRIC_SPECS, type MetricSpec } from '../shared/names';
import { teeMeterProvider } from './meter-provider-tee';
import { getRegistration } from './registration';

export type { ForkwatchRegistration } from './registration';
/** @internal Kept in this entry's export list; the tee lives in meter-provider-tee.ts. */
export { teeMeterProvider };

/**
 * A pull MetricReader (cumulative, default aggregation: what the Prometheus exporter uses) that only collects when
 * prom-client is scraped. Put it in your own MeterProvider beside other readers, then pass it as `{ reader }`.
 */
export class ForkwatchMetricReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }

  protected override async onForceFlush(): Promise<void> {}

  protected override async onShutdown(): Promise<void> {}
}

/**
 * What the bridge uses of a prom-client Registry: any prom-client registry (Prometheus or OpenMetrics content type, the
 * app's own copy of prom-client) has it.
 */
export interface PromClientRegistry {
  // biome-ignore lint/suspicious/noExplicitAny: public type; takes every prom-client major's Metric, and apps' own registries
  registerMetric(metric: any): void;
  getSingleMetric(name: string): unknown;
  removeSingleMetric(name: string): void;
}

export interface RegisterForkwatchMetricsOptions {
  /**
   * The instrumentation whose metrics to expose. Default: the one `forkwatch/register` started. Without register,
   * pass yours: forkwatch then gives it a MeterProvider of its own for prom-client, beside the global one.
   */
  instrumentation?: ForkwatchInstrumentation;
  /** A ForkwatchMetricReader you put in your own MeterProvider (used as is; nothing is re-wired). */
  reader?: ForkwatchMetricReader;
}

export interface ForkwatchPromClientBridge {
  /** The reader that feeds the registry (resolves once forkwatch/register has decided how it runs). */
  readonly reader: Promise<ForkwatchMetricReader | undefined>;
  /** Removes forkwatch's metrics from the registry. */
  unregister(): void;
}

/**
 * Registers forkwatch's metric families in `registry`. Idempotent per registry. Call it once at start-up; prom-client
 * then reads the current values on every scrape.
 */
export function registerForkwatchMetrics(
  registry: PromClientRegistry,
  options: RegisterForkwatchMetricsOptions = {},
): ForkwatchPromClientBridge {
  if (!registry || typeof registry.registerMetric !== 'function') {
    throw new TypeError('registerForkwatchMetrics(registry): pass a prom-client Registry');
  }
  const existing = bridges.get(registry);
  if (existing) return existing;
  const reader = resolveReader(options);
  const families = METRIC_SPECS.map(spec => new ForkwatchPromMetric(spec, reader));
  for (const family of families) registry.registerMetric(family);
  const bridge: ForkwatchPromClientBridge = {
    reader,
    unregister() {
      bridges.delete(registry);
      for (const family of families) {
        if (registry.getSingleMetric(family.key) === family) registry.removeSingleMetric(family.key);
      }
    },
  };
  bridges.set(registry, bridge);
  return bridge;
}

const bridges = new WeakMap<PromClientRegistry, ForkwatchPromClientBridge>();

function resolveReader(options: RegisterForkwatchMetricsOptions): Promise<ForkwatchMetricReader | undefined> {
  if (options.reader) return Promise.resolve(options.reader);
  const registration = getRegistration();
  if (!options.instrumentation) {
    if (!registration) {
      throw new TypeError(
        'registerForkwatchMetrics: no instrumentation. Run the app with `--require forkwatch/register` (or `--import`), ' +
          'or pass { instrumentation } or { reader }',
      );
    }
    // register decides one tick after it is loaded whether it runs an SDK; the app may call us before that.
    return registration.ready.then(() => {
      if (!registration.instrumentation) return undefined; // disabled (OTEL_SDK_DISABLED) or failed: nothing to show
      // register creates it as a ForkwatchMetricReader (register-exporters.ts).
      if (registration.promClientReader) return registration.promClientReader as ForkwatchMetricReader;
      const own = ownReader();
      registration.addMeterProvider(own.provider);
      return own.reader;
    });
  }
  if (registration && registration.instrumentation === options.instrumentation) {
    return resolveReader({});
  }
  const own = ownReader();
  options.instrumentation.setMeterProvider(teeMeterProvider([metrics.getMeterProvider(), own.provider]));
  return Promise.resolve(own.reader);
}

function ownReader(): { reader: ForkwatchMetricReader; provider: MeterProvider } {
  const reader = new ForkwatchMetricReader();
  return { reader, provider: new MeterProvider({ readers: [reader] }) };
}

// ---------------------------------------------------------------------------------------------------------------
// The prom-client side: one metric object per family, with the shape prom-client's Registry reads (`name`, `help`,
// `type`, `aggregator`, `get()`, `reset()`). Values carry `metricName` for `_bucket`/`_sum`/`_count`, as
// prom-client's own Histogram does.

interface PromValue {
  value: number;
  labels: Record<string, string>;
  metricName?: string;
}

/** One collection shared by all families of a scrape: prom-client calls get() on every metric at once. */
const inflight = new WeakMap<
  ForkwatchMetricReader,
  Promise<Map<string, { scope: ScopeMetrics['scope']; data: MetricData }[]>>
>();

function collect(reader: ForkwatchMetricReader) {
  let pending = inflight.get(reader);
  if (!pending) {
    pending = reader.collect().then(
      ({ resourceMetrics }) => {
        inflight.delete(reader);
        const byName = new Map<string, { scope: ScopeMetrics['scope']; data: MetricData }[]>();
        for (const scopeMetrics of resourceMetrics.scopeMetrics) {
          for (const data of scopeMetrics.metrics) {
            const list = byName.get(data.descriptor.name) ?? [];
            list.push({ scope: scopeMetrics.scope, data });
            byName.set(data.descriptor.name, list);
          }
        }
        return byName;
      },
      () => {
        // Not bound to a MeterProvider (yet), or shut down: the families show no samples.
        inflight.delete(reader);
        return new Map();
      },
    );
    inflight.set(reader, pending);
  }
  return pending;
}

class ForkwatchPromMetric {
  /** The key prom-client stored us under (OpenMetrics registries rename counters in place on every scrape). */
  readonly key: string;
  name: string;
  readonly help: string;
  readonly type: MetricSpec['kind'];
  readonly aggregator = 'sum';

  constructor(
    private readonly spec: MetricSpec,
    private readonly reader: Promise<ForkwatchMetricReader | undefined>,
  ) {
    this.key = this.name = spec.prometheusName;
    this.help = spec.description;
    this.type = spec.kind;
  }

  async get(): Promise<{ name: string; help: string; type: string; values: PromValue[]; aggregator: string }> {
    const reader = await this.reader.catch(() => undefined);
    const found = reader ? ((await collect(reader)).get(this.spec.otelName) ?? []) : [];
    const values: PromValue[] = [];
    for (const { scope, data } of found) {
      const scopeLabels: Record<string, string> = { otel_scope_name: scope.name };
      if (scope.schemaUrl) scopeLabels.otel_scope_schema_url = scope.schemaUrl;
      if (scope.version) scopeLabels.otel_scope_version = scope.version;
      if (data.dataPointType === DataPointType.HISTOGRAM) {
        for (const point of data.dataPoints)
          values.push(...histogramValues(this.name, point.attributes, point.value, scopeLabels));
      } else {
        for (const point of data.dataPoints) {
          values.push({ value: point.value as number, labels: { ...labelsOf(point.attributes), ...scopeLabels } });
        }
      }
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** prom-client's Registry.resetMetrics(): forkwatch's values are cumulative OpenTelemetry data, owned by the SDK. */
  reset(): void {}
}

function histogramValues(
  name: string,
  attributes: Attributes,
  histogram: Histogram,
  scopeLabels: Record<string, string>,
): PromValue[] {
  const labels = { ...labelsOf(attributes), ...scopeLabels };
  const values: PromValue[] = [];
  if (histogram.count != null) values.push({ metricName: `${name}_count`, labels, value: histogram.count });
  if (histogram.sum != null) values.push({ metricName: `${name}_sum`, labels, value: histogram.sum });
  let cumulative = 0;
  const { boundaries, counts } = histogram.buckets;
  for (let i = 0; i < counts.length; i++) {
    cumulative += counts[i] ?? 0;
    const bound = boundaries[i];
    const le = bound === undefined || bound === Infinity ? '+Inf' : String(bound);
    values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
    if (le === '+Inf') break;
  }
  return values;
}

/** Attribute keys and values as the OpenTelemetry Prometheus exporter writes them. */
function labelsOf(attributes: Attributes): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(attributes)) {
    labels[key.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_')] =
      typeof value === 'string' ? value : JSON.stringify(value);
  }
  return labels;
}
