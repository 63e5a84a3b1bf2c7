/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The metric exporters forkwatch/register starts with its SDK (OTEL_METRICS_EXPORTER): Prometheus, served from
 * register's own server; OTLP; the console (stderr); and, when any exists, the reader forkwatch/prom-client collects
 * through. Beside register-sdk.ts, which builds the SDK around them.
 */
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { Server } from 'node:http';
import type { RegisterEnvConfig } from './env-config';
import type { ForkwatchMetricReader } from './prom-client';
import { StderrMetricExporter } from './register-stderr';

/** Where the Prometheus exporter serves, as its own server would. */
const PROMETHEUS_PATH = '/metrics';

export interface MetricExporters {
  readers: IMetricReader[];
  /** Set when OTEL_METRICS_EXPORTER names prometheus: register serves its handler (servePrometheus). */
  prometheus: PrometheusExporter | undefined;
  /** For forkwatch/prom-client: idle until a registry is scraped. */
  promClientReader: ForkwatchMetricReader | undefined;
}

export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One reader per exporter named; one that cannot be created is left out with one line. */
export function createMetricExporters(env: RegisterEnvConfig, say: (line: string) => void): MetricExporters {
  const exporters: MetricExporters = { readers: [], prometheus: undefined, promClientReader: undefined };
  const { otlpMetricReader, periodicReader } = require('./register-sdk') as typeof import('./register-sdk');
  for (const name of env.metricsExporters) {
    try {
      if (name === 'prometheus') {
        const { PrometheusExporter } =
          require('@opentelemetry/exporter-prometheus') as typeof import('@opentelemetry/exporter-prometheus');
        // register serves the exporter's handler from its own server: a busy port gives one clear line, and the
        // server and its connections never keep a finished app alive.
        const exporter = new PrometheusExporter({ preventServerStart: true });
        exporters.prometheus = exporter;
        exporters.readers.push(exporter);
      } else if (name === 'otlp') {
        const reader = otlpMetricReader(say);
        if (reader) exporters.readers.push(reader);
      } else {
        exporters.readers.push(periodicReader(new StderrMetricExporter()));
      }
    } catch (error) {
      say(`OTEL_METRICS_EXPORTER: could not create the ${name} exporter (${describeError(error)}); left out`);
    }
  }
  if (exporters.readers.length > 0) {
    const { ForkwatchMetricReader } = require('./prom-client') as typeof import('./prom-client');
    exporters.promClientReader = new ForkwatchMetricReader();
    exporters.readers.push(exporters.promClientReader);
  }
  return exporters;
}

/** Serves the Prometheus exporter's handler on OTEL_EXPORTER_PROMETHEUS_HOST/PORT; unref'd, one line on failure. */
export function servePrometheus(
  exporter: PrometheusExporter,
  { host, port }: RegisterEnvConfig['prometheus'],
  resourceSettled: () => Promise<void>,
  say: (line: string) => void,
): Server {
  const where = `${host ?? 'all interfaces'} port ${port}`;
  const { createServer } = require('node:http') as typeof import('node:http');
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== PROMETHEUS_PATH) return void response.writeHead(404).end('Not found');
    void resourceSettled().then(() => exporter.getMetricsRequestHandler(request, response));
  });
  server.on('connection', socket => socket.unref());
  server.once('error', (error: NodeJS.ErrnoException) => {
    const reason =
      error?.code === 'EADDRINUSE'
        ? 'the port is already in use (EADDRINUSE); set OTEL_EXPORTER_PROMETHEUS_PORT to a free port'
        : `${describeError(error)}; check OTEL_EXPORTER_PROMETHEUS_HOST and OTEL_EXPORTER_PROMETHEUS_PORT`;
    say(`cannot serve Prometheus metrics on ${where}: ${reason}. The app keeps running without forkwatch's /metrics`);
  });
  server.listen(port, host, () => server.unref());
  server.unref();
  return server;
}
