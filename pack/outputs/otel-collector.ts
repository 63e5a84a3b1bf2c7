/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * An OpenTelemetry Collector (contrib) config for apps that send forkwatch's metrics over OTLP: OTLP in, the
 * `prometheus` exporter out, with the config's aggregation labels copied from resource attributes onto every point.
 * Its default naming (UnderscoreEscapingWithSuffixes, add_metric_suffixes) gives the names of src/shared/names.ts
 * (test/register/collector-naming.test.ts); `job` and `instance` come from service.namespace/service.name and
 * service.instance.id, which Prometheus keeps only with honor_labels (see scrapeConfig).
 */
import { DEFAULT_CONFIG, type ForkwatchConfig } from '../config/config';

/**
 * The resource attribute each aggregation label is copied from. A renamed cluster label (clusterLabel k8s_cluster)
 * without an entry of its own takes the default cluster label's attribute, so renaming it keeps the copy.
 */
export function labelAttributes(config: ForkwatchConfig): Map<string, string | undefined> {
  const from = config.otelCollector.resourceAttributes;
  const defaultCluster = DEFAULT_CONFIG.clusterLabel;
  return new Map(
    config.aggregationLabels.map(label => [
      label,
      from[label] ?? (label === config.clusterLabel ? from[defaultCluster] : undefined),
    ]),
  );
}

/** Aggregation labels the Collector config cannot set: the rules would see them empty for OTLP-fed apps. */
export function collectorWarnings(config: ForkwatchConfig): string[] {
  return [...labelAttributes(config)]
    .filter(([, attribute]) => attribute === undefined)
    .map(
      ([label]) =>
        `otelCollector.resourceAttributes names no resource attribute for the aggregation label ${label}: the ` +
        'Collector config leaves it unset (add e.g. "' +
        label +
        '": "k8s.namespace.name")',
    );
}

export function collectorConfig(config: ForkwatchConfig): Record<string, unknown> {
  const copies = [...labelAttributes(config)].flatMap(([label, attribute]) => {
    if (attribute === undefined) return [];
    const from = `resource.attributes[${JSON.stringify(attribute)}]`;
    return [`set(datapoint.attributes[${JSON.stringify(label)}], ${from}) where ${from} != nil`];
  });
  return {
    receivers: { otlp: { protocols: { grpc: { endpoint: '0.0.0.0:4317' }, http: { endpoint: '0.0.0.0:4318' } } } },
    processors: {
      'transform/forkwatch': { metric_statements: [{ statements: copies }] },
      batch: {},
    },
    exporters: {
      prometheus: {
        endpoint: config.otelCollector.prometheusEndpoint,
        // Resource attributes stay in target_info; only the labels the rules aggregate on are copied (above).
        resource_to_telemetry_conversion: { enabled: false },
      },
    },
    service: {
      pipelines: {
        metrics: { receivers: ['otlp'], processors: ['transform/forkwatch', 'batch'], exporters: ['prometheus'] },
      },
    },
  };
}

/** The Prometheus scrape job for the Collector: honor_labels keeps the apps' job and instance, not the Collector's. */
export function scrapeConfig(config: ForkwatchConfig): Record<string, unknown> {
  const port = config.otelCollector.prometheusEndpoint.split(':').pop();
  return {
    scrape_configs: [
      { job_name: 'otel-collector', honor_labels: true, static_configs: [{ targets: [`otel-collector:${port}`] }] },
    ],
  };
}
