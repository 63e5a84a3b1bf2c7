/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The baseline every outside-in process starts with: a bare NodeSDK, preloaded with `--require`, as an application
// that already runs OpenTelemetry has it. No instrumentations, no network: spans go to an in-memory exporter and
// metrics to a periodic reader whose interval is longer than a run, so the metrics SDK is real (forkwatch's
// counters aggregate) but nothing is exported. `--import forkwatch/register` then finds these providers and
// reports through them, as it does for such an app.
const { NodeSDK } = require('@opentelemetry/sdk-node');
const { InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const {
  AggregationTemporality,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader,
} = require('@opentelemetry/sdk-metrics');

const sdk = new NodeSDK({
  spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
  metricReaders: [
    new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 3_600_000,
    }),
  ],
  instrumentations: [],
});
sdk.start();
