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

/**
 * Serves the Prometheus exporter's metrics on OTEL_EXPORTER_PROMETHEUS_HOST/PORT; unref'd, one line on failure.
 *
 * The server is forkwatch's own, in the host's process, so whatever connects must cost the host little and nothing
 * for long: the listener's limits (shared/listener.ts) close slow and silent connections, and scrapes that arrive
 * while a collection runs share it and its one serialized body (the exporter's own handler collects and serializes
 * once per request: 200 concurrent scrapers kept 200 copies alive and grew the host's RSS by 200 MB for good).
 */
export function servePrometheus(
  exporter: PrometheusExporter,
  { host, port }: RegisterEnvConfig['prometheus'],
  resourceSettled: () => Promise<void>,
  say: (line: string) => void,
): Server {
  const where = `${host ?? 'all interfaces'} port ${port}`;
  const { createServer } = require('node:http') as typeof import('node:http');
  const { limitListener, listenerOptions, sendAnswer } =
    require('../shared/listener') as typeof import('../shared/listener');
  const scrape = coalescedScrape(exporter, resourceSettled);
  const server = createServer(listenerOptions(), (request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== PROMETHEUS_PATH)
      return sendAnswer(response, 404, { 'content-type': 'text/plain' }, 'Not found');
    // A client that left before the answer is simply not answered: it held no slot, and its body is shared.
    void scrape().then(body => sendAnswer(response, 200, { 'content-type': 'text/plain' }, body));
  });
  limitListener(server);
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

/**
 * One collection at a time: a scrape that comes while one runs gets its body (a few milliseconds old), and the next
 * scrape after it ends starts another. What the exporter's handler answers, it answers: the text, or the failure
 * as a comment.
 */
export function coalescedScrape(
  exporter: PrometheusExporter,
  resourceSettled: () => Promise<void>,
): () => Promise<Buffer> {
  const { PrometheusSerializer } =
    require('@opentelemetry/exporter-prometheus') as typeof import('@opentelemetry/exporter-prometheus');
  const { diag } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const serializer = new PrometheusSerializer();
  let running: Promise<Buffer> | undefined;
  const collect = async (): Promise<Buffer> => {
    await resourceSettled();
    try {
      const { resourceMetrics, errors } = await exporter.collect();
      if (errors.length > 0) diag.error('PrometheusExporter: metrics collection errors', ...errors);
      return Buffer.from(serializer.serialize(resourceMetrics), 'utf8');
    } catch (error) {
      return Buffer.from(`# failed to export metrics: ${error}`, 'utf8');
    }
  };
  return () => {
    running ??= collect().finally(() => {
      running = undefined;
    });
    return running;
  };
}
