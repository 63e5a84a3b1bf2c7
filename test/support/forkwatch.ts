/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** ForkwatchInstrumentation on private, in-memory providers, for in-process tests with the manual API. */
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ForkwatchInstrumentation } from '../../src/lifecycle/instrumentation';
import type { ForkwatchInstrumentationConfig } from '../../src/shared/types';

export interface Forkwatch {
  instrumentation: ForkwatchInstrumentation;
  spans(name?: string): ReadableSpan[];
  resetSpans(): void;
  /** Prometheus text of forkwatch's metrics, as scraped. */
  metrics(): Promise<string>;
  /**
   * Lets the instrumentation's asynchronous recording (after the SDK's promise settled) finish. A short pause: use it
   * before positive checks only. Before a negative check ("nothing was recorded"), make a control request that does
   * record and wait for it (`waitForSpans`), so the check proves the code under test ran.
   */
  settle(): Promise<void>;
  /** Waits until `count` finished spans named `name` were exported (then returns them); throws after `timeoutMs`. */
  waitForSpans(name: string, count: number, timeoutMs?: number): Promise<ReadableSpan[]>;
  teardown(): Promise<void>;
}

/** A ForkwatchInstrumentation on private providers, with the given modules instrumented by the manual API. */
export function setupForkwatch(config: ForkwatchInstrumentationConfig, modules: object[]): Forkwatch {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [prometheus] });
  const instrumentation = new ForkwatchInstrumentation({ ...config, enabled: false });
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.enable();
  instrumentation.manuallyInstrument(...modules);
  return {
    instrumentation,
    spans: name => exporter.getFinishedSpans().filter(s => name === undefined || s.name === name),
    resetSpans: () => exporter.reset(),
    async metrics() {
      const { resourceMetrics } = await prometheus.collect();
      return new PrometheusSerializer().serialize(resourceMetrics);
    },
    settle: () => new Promise(resolve => setTimeout(resolve, 20)),
    async waitForSpans(name, count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = exporter.getFinishedSpans().filter(s => s.name === name);
        if (found.length >= count) return found;
        if (Date.now() > deadline) throw new Error(`${found.length} of ${count} ${name} spans after ${timeoutMs} ms`);
        await new Promise(resolve => setTimeout(resolve, 5));
      }
    },
    async teardown() {
      instrumentation.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
