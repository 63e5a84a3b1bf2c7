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
import { setTimeout } from 'node:timers';
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
 * How often register's `/metrics` collects, however fast scrapes come. A collection of the host's metrics allocates
 * about 25 times its body (half a megabyte for a 20 KB body); back to back under 200 concurrent scrapers, those
 * collections made V8 double the host's young generation (twice on Node 24: 16 to 64 MB semi-spaces) and V8 keeps
 * those pages after the load: the host's RSS grew 50 to 130 MB for good (docs/benchmark.md). A Prometheus scrapes every
 * few seconds at most, so that its scrape may wait up to a second for its body costs it nothing.
 */
export const SCRAPE_LIMITS = {
  /** A collection starts at most this often; a scrape that comes sooner waits for the next one and shares it. */
  minIntervalMs: 100,
  /** ...and takes at most about a tenth of the host's time: after one that took d ms, the next starts 10 d later. */
  dutyFactor: 10,
  /**
   * ...and each scrape it answered puts the next one this much later: at most 200 answers a second however many
   * scrapers come, so that what Node allocates per request stays bounded too (each waiting scrape's request survives
   * a young-generation GC, and what survives is what makes V8 grow it).
   */
  perScrapeMs: 5,
  /** However busy, a scrape waits at most this long for its collection to start. */
  maxIntervalMs: 1_000,
  /** Scrapes waiting for a body at once (pipelined requests included); more get 503 at once. */
  maxWaiting: 256,
} as const;

/** The pace of pacedScrape (SCRAPE_LIMITS's, but for tests). */
export type ScrapePace = Readonly<Record<'minIntervalMs' | 'dutyFactor' | 'perScrapeMs' | 'maxIntervalMs', number>>;

/**
 * Serves the Prometheus exporter's metrics on OTEL_EXPORTER_PROMETHEUS_HOST/PORT; unref'd, one line on failure.
 *
 * The server is forkwatch's own, in the host's process, so whatever connects must cost the host little and nothing
 * for long: the listener's limits (shared/listener.ts) close slow and silent connections, scrapes are paced and
 * share one collection and its one serialized Buffer (pacedScrape), and at most `SCRAPE_LIMITS.maxWaiting` wait.
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
  const scrape = pacedScrape(exporter, resourceSettled);
  let waiting = 0;
  const server = createServer(listenerOptions(), (request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== PROMETHEUS_PATH)
      return sendAnswer(response, 404, { 'content-type': 'text/plain' }, 'Not found');
    if (waiting >= SCRAPE_LIMITS.maxWaiting)
      return sendAnswer(response, 503, { 'content-type': 'text/plain', 'retry-after': 1 }, 'too many scrapes\n');
    // A client that leaves before its answer gives its place back at once; its body is shared, so it is not answered.
    waiting++;
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      waiting--;
    };
    response.once('close', leave);
    void scrape().then(body => {
      leave();
      sendAnswer(response, 200, { 'content-type': 'text/plain' }, body);
    });
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
 * One collection at a time, paced by SCRAPE_LIMITS: a scrape that comes while one runs gets its body (a few
 * milliseconds old); one that comes sooner than the pace allows waits for the next collection, which every scrape
 * that comes meanwhile shares. What the exporter's handler answers, it answers: the text, or the failure as a comment,
 * serialized once into a Buffer every answer writes as it is.
 */
export function pacedScrape(
  exporter: PrometheusExporter,
  resourceSettled: () => Promise<void>,
  limits: ScrapePace = SCRAPE_LIMITS,
): () => Promise<Buffer> {
  const { PrometheusSerializer } =
    require('@opentelemetry/exporter-prometheus') as typeof import('@opentelemetry/exporter-prometheus');
  const { diag } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  // The module's own clock: a host that fakes the global performance or Date cannot stall the pace.
  const { performance } = require('node:perf_hooks') as typeof import('node:perf_hooks');
  const serializer = new PrometheusSerializer();
  let running: Promise<Buffer> | undefined;
  let nextStart = Number.NEGATIVE_INFINITY;
  /** Scrapes that joined the collection now running or waiting to run. */
  let joined = 0;
  const collect = async (): Promise<Buffer> => {
    await resourceSettled();
    const started = performance.now();
    try {
      const { resourceMetrics, errors } = await exporter.collect();
      if (errors.length > 0) diag.error('PrometheusExporter: metrics collection errors', ...errors);
      return Buffer.from(serializer.serialize(resourceMetrics), 'utf8');
    } catch (error) {
      return Buffer.from(`# failed to export metrics: ${error}`, 'utf8');
    } finally {
      const took = performance.now() - started;
      const busy = Math.max(limits.minIntervalMs, took * limits.dutyFactor, joined * limits.perScrapeMs);
      nextStart = started + Math.min(limits.maxIntervalMs, busy);
    }
  };
  const later = (ms: number) =>
    new Promise<void>(resolve => {
      setTimeout(resolve, ms).unref();
    });
  return () => {
    joined++;
    if (running) return running;
    const wait = Math.min(limits.maxIntervalMs, nextStart - performance.now());
    running = (wait > 0 ? later(wait).then(collect) : collect()).finally(() => {
      running = undefined;
      joined = 0;
    });
    return running;
  };
}
