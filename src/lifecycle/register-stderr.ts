/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The stderr side of forkwatch/register. An stdio MCP server's stdout is its protocol stream, so everything register
 * and the OpenTelemetry SDK would print goes to stderr: OpenTelemetry's DiagConsoleLogger and console exporters use
 * stdout for some levels.
 */
import type { DiagLogger } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { inspect } from 'node:util';

export function writeStderr(line: string): void {
  try {
    process.stderr.write(`${line}\n`);
  } catch {
    // stderr closed: nothing else to do.
  }
}

export function formatArgs(message: unknown, args: unknown[]): string {
  const parts = [message, ...args].map(part =>
    typeof part === 'string'
      ? part
      : part instanceof Error
        ? part.message
        : inspect(part, { depth: 4, breakLength: Infinity }),
  );
  return parts.join(' ');
}

/** The global DiagLogger register installs when it runs the SDK: OpenTelemetry's messages, one stderr line each. */
export class StderrDiagLogger implements DiagLogger {
  constructor(private readonly onError: (message: string) => boolean) {}
  error = (message: string, ...args: unknown[]) => {
    const text = formatArgs(message, args);
    if (!this.onError(text)) writeStderr(`forkwatch: opentelemetry error: ${text}`);
  };
  warn = (message: string, ...args: unknown[]) =>
    writeStderr(`forkwatch: opentelemetry warn: ${formatArgs(message, args)}`);
  info = (message: string, ...args: unknown[]) =>
    writeStderr(`forkwatch: opentelemetry info: ${formatArgs(message, args)}`);
  debug = (message: string, ...args: unknown[]) =>
    writeStderr(`forkwatch: opentelemetry debug: ${formatArgs(message, args)}`);
  verbose = (message: string, ...args: unknown[]) =>
    writeStderr(`forkwatch: opentelemetry verbose: ${formatArgs(message, args)}`);
}

/** OTEL_*_EXPORTER=console, on stderr: the console exporters of the SDK print to stdout. */
export class StderrMetricExporter implements PushMetricExporter {
  export(resourceMetrics: ResourceMetrics, resultCallback: (result: ExportResult) => void): void {
    for (const scopeMetrics of resourceMetrics.scopeMetrics) {
      for (const metric of scopeMetrics.metrics) {
        const { descriptor, dataPointType, dataPoints } = metric;
        writeStderr(inspect({ descriptor, dataPointType, dataPoints }, { depth: 6, breakLength: Infinity }));
      }
    }
    resultCallback({ code: 0 });
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

export class StderrSpanProcessor implements SpanProcessor {
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    const context = span.spanContext();
    writeStderr(
      inspect(
        {
          traceId: context.traceId,
          parentSpanId: span.parentSpanContext?.spanId,
          name: span.name,
          id: context.spanId,
          kind: span.kind,
          timestamp: span.startTime,
          duration: span.duration,
          attributes: span.attributes,
          status: span.status,
          events: span.events,
        },
        { depth: 4, breakLength: Infinity },
      ),
    );
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}
