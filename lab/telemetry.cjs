/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// OpenTelemetry set-up of a lab process (the clients, and the servers through server-app.cjs): the real SDK with an
// in-memory span exporter and the real Prometheus exporter, and forkwatch registered before any MCP module is loaded.
const { trace, metrics } = require('@opentelemetry/api');
const { registerInstrumentations } = require('@opentelemetry/instrumentation');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { MeterProvider } = require('@opentelemetry/sdk-metrics');
const { PrometheusExporter, PrometheusSerializer } = require('@opentelemetry/exporter-prometheus');

function setupTelemetry({ forkwatch, instrumentationConfig, metricsPort }) {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  tracerProvider.register();
  const exporter = new PrometheusExporter(
    metricsPort ? { host: '127.0.0.1', port: metricsPort } : { preventServerStart: true },
  );
  const meterProvider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(meterProvider);
  const instrumentation = new forkwatch.ForkwatchInstrumentation(instrumentationConfig);
  registerInstrumentations({ instrumentations: [instrumentation], tracerProvider, meterProvider });
  return {
    instrumentation,
    tracer: trace.getTracer('fork-lab'),
    async scrape() {
      const { resourceMetrics } = await exporter.collect();
      return new PrometheusSerializer().serialize(resourceMetrics);
    },
    finishedSpans() {
      return spans.getFinishedSpans().map(s => ({
        name: s.name,
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentSpanId: s.parentSpanContext?.spanId,
        status: s.status.code,
        attributes: s.attributes,
        events: s.events.map(e => ({ name: e.name, attributes: e.attributes })),
      }));
    },
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

module.exports = { setupTelemetry };
