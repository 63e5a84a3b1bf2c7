/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The telemetry set-ups the benchmark compares. Each runs in its own client process, before the MCP SDK is loaded,
// the way an application registers OpenTelemetry: no network exporter anywhere (spans go to an in-memory exporter,
// metrics to a periodic reader whose interval is longer than a run).
const { metrics } = require('@opentelemetry/api');

const VARIANTS = {
  bare: { label: 'bare client', baseline: null },
  // The same as bare, run as one more variant: its ratio to bare shows what "no difference" looks like in this run.
  'bare-again': { label: 'bare client again (A/A control)', baseline: 'bare' },
  forkwatch: { label: 'forkwatch (providers + registerInstrumentations)', baseline: 'bare' },
  sdk: { label: 'bare NodeSDK (no instrumentations)', baseline: 'bare' },
  'sdk+forkwatch': { label: 'NodeSDK + forkwatch', baseline: 'sdk' },
  'sdk+undici': { label: 'NodeSDK + @opentelemetry/instrumentation-undici', baseline: 'sdk' },
  'sdk+openinference': { label: 'NodeSDK + @arizeai/openinference-instrumentation-mcp', baseline: 'sdk' },
};

function exporters() {
  const { InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
  const {
    AggregationTemporality,
    InMemoryMetricExporter,
    PeriodicExportingMetricReader,
  } = require('@opentelemetry/sdk-metrics');
  const spans = new InMemorySpanExporter();
  const reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 3_600_000,
  });
  return { spans, spanProcessor: new SimpleSpanProcessor(spans), reader };
}

/**
 * Sets up one variant and returns { spans, check(sdk), shutdown() }: `check` runs once the SDK is loaded and
 * throws unless the variant's instrumentation is really in place.
 */
function setupVariant(name, { forkwatchEntry }) {
  if (!VARIANTS[name]) throw new Error(`unknown variant ${name}`);
  if (name === 'bare' || name === 'bare-again')
    return { spans: undefined, instrumentation: undefined, check() {}, async shutdown() {} };

  const { spans, spanProcessor, reader } = exporters();
  let instrumentation;
  let shutdown;
  if (name === 'forkwatch') {
    const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
    const { MeterProvider } = require('@opentelemetry/sdk-metrics');
    const { registerInstrumentations } = require('@opentelemetry/instrumentation');
    const { ForkwatchInstrumentation } = require(forkwatchEntry);
    const tracerProvider = new NodeTracerProvider({ spanProcessors: [spanProcessor] });
    tracerProvider.register();
    const meterProvider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(meterProvider);
    instrumentation = new ForkwatchInstrumentation();
    registerInstrumentations({ instrumentations: [instrumentation], tracerProvider, meterProvider });
    shutdown = () => Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
  } else {
    const { NodeSDK } = require('@opentelemetry/sdk-node');
    const instrumentations = [];
    if (name === 'sdk+forkwatch') {
      const { ForkwatchInstrumentation } = require(forkwatchEntry);
      instrumentation = new ForkwatchInstrumentation();
      instrumentations.push(instrumentation);
    } else if (name === 'sdk+undici') {
      const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
      instrumentation = new UndiciInstrumentation();
      instrumentations.push(instrumentation);
    } else if (name === 'sdk+openinference') {
      const { MCPInstrumentation } = require('@arizeai/openinference-instrumentation-mcp');
      instrumentation = new MCPInstrumentation();
      instrumentations.push(instrumentation);
    }
    const sdk = new NodeSDK({ spanProcessors: [spanProcessor], metricReaders: [reader], instrumentations });
    sdk.start();
    shutdown = () => sdk.shutdown();
  }

  return {
    spans,
    instrumentation,
    /** Throws unless the instrumentation is in place; `sdk` holds the loaded client modules. */
    check(sdk) {
      const proto = sdk.StreamableHTTPClientTransport.prototype;
      if (name === 'forkwatch' || name === 'sdk+forkwatch') {
        if (proto._handleSseStream.__wrapped !== true)
          throw new Error(`${name}: the SDK client is not patched by forkwatch`);
      }
      if (name === 'sdk+openinference') {
        // Its module hooks do not fire for the SDK (its own docs say so): the manual API does the patching.
        instrumentation.manuallyInstrument({ clientStreamableHTTPModule: sdk.streamableHttpModule });
        if (proto.send.__wrapped !== true || proto.start.__wrapped !== true) {
          throw new Error(`${name}: the SDK client is not patched by openinference`);
        }
      }
    },
    shutdown,
  };
}

module.exports = { VARIANTS, setupVariant };
