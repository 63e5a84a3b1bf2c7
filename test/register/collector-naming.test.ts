/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch's Prometheus names must come out the same through an OpenTelemetry Collector's Prometheus exporters (which
 * append unit suffixes) as through the direct OpenTelemetry Prometheus exporter (which does not), so one set of
 * dashboards and alerts works for both pipelines. The duration histogram is the one at stake:
 * `forkwatch.client.resume.gap_seconds` with unit `s` is `forkwatch_client_resume_gap_seconds` either way.
 *
 * No Collector binary is available here and Debian's Prometheus 2.42 has no OTLP receiver (added in 2.47), so the
 * Collector side is the naming rule of prometheus/otlptranslator (otlp-translator.ts), checked against the library's
 * own test vectors, and applied to what a register-instrumented app really sends over OTLP.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { METRICS, METRIC_SPECS, type MetricKind } from '../../src/shared/names';
import { type OtlpMetricType, collectorName, collectorNameUtf8, jsExporterName } from './otlp-translator';
import {
  type AppDir,
  type Lab,
  leasePort,
  labEnv,
  makeAppDir,
  parseMetricFamilies,
  scrapeText,
  startApp,
  startLab,
} from './support';

describe('the translation rule (vectors from prometheus/otlptranslator metric_namer_test.go and README)', () => {
  test.each<[string, string, OtlpMetricType, string]>([
    ['requests', '', 'monotonic_counter', 'requests_total'],
    ['cpu_usage', '1', 'gauge', 'cpu_usage_ratio'],
    ['items', '1', 'monotonic_counter', 'items_total'],
    ['response_time', 'ms', 'gauge', 'response_time_milliseconds'],
    ['memory_usage', 'By', 'gauge', 'memory_usage_bytes'],
    ['requests', '1/s', 'gauge', 'requests_per_second'],
    ['throughput', 'By/s', 'gauge', 'throughput_bytes_per_second'],
    ['custom_metric', 'custom_unit', 'gauge', 'custom_metric_custom_unit'],
    ['custom_metric', '{custom}', 'gauge', 'custom_metric'],
    ['custom_metric', 'By/{custom}', 'gauge', 'custom_metric_bytes'],
    ['requests_total', '', 'monotonic_counter', 'requests_total'],
    ['cpu_usage_ratio', '1', 'gauge', 'cpu_usage_ratio'],
    ['response_time_seconds', 's', 'gauge', 'response_time_seconds'],
    ['request_duration', 's', 'histogram', 'request_duration_seconds'],
    ['request_size', 'By', 'exponential_histogram', 'request_size_bytes'],
    ['active_connections', '', 'non_monotonic_counter', 'active_connections'],
    [
      'metric__with__multiple__underscores',
      'unit__multiple__underscores',
      'gauge',
      'metric_with_multiple_underscores_unit_multiple_underscores',
    ],
    ['custom_metric', 'unit@with#special/chars', 'gauge', 'custom_metric_unit_with_special_per_chars'],
    ['uptime', 'd', 'gauge', 'uptime_days'],
    ['cache_size', 'KiBy', 'gauge', 'cache_size_kibibytes'],
    ['http.server.request.duration', 's', 'histogram', 'http_server_request_duration_seconds'],
    ['requests.count', '1', 'monotonic_counter', 'requests_count_total'],
  ])('UnderscoreEscapingWithSuffixes: %s [%s] %s -> %s', (name, unit, type, expected) => {
    expect(collectorName(name, unit, type)).toBe(expected);
  });

  test.each<[string, string, OtlpMetricType, string]>([
    ['requests_total', '', 'monotonic_counter', 'requests_total'],
    ['cpu_usage_ratio', '1', 'gauge', 'cpu_usage_ratio'],
    ['response_time_seconds', 's', 'gauge', 'response_time_seconds'],
    ['cpu_seconds_total', 's', 'monotonic_counter', 'cpu_seconds_total'],
    ['requêsts', '', 'monotonic_counter', 'requêsts_total'],
    ['respønse_time', 'ms', 'gauge', 'respønse_time_milliseconds'],
    ['requêsts', '1/s', 'gauge', 'requêsts_per_second'],
  ])('NoUTF8EscapingWithSuffixes: %s [%s] %s -> %s', (name, unit, type, expected) => {
    expect(collectorNameUtf8(name, unit, type)).toBe(expected);
  });

  test('why the unit is in the name: without it the two pipelines disagree', () => {
    expect(jsExporterName('forkwatch.client.resume.gap', 'histogram')).toBe('forkwatch_client_resume_gap');
    expect(collectorName('forkwatch.client.resume.gap', 's', 'histogram')).toBe('forkwatch_client_resume_gap_seconds');
  });
});

const typeOf = (kind: MetricKind): OtlpMetricType =>
  kind === 'counter' ? 'monotonic_counter' : kind === 'gauge' ? 'gauge' : 'histogram';

test.each(METRIC_SPECS.map(spec => [spec.otelName, spec] as const))(
  '%s: one Prometheus name in every pipeline',
  (_, spec) => {
    const type = typeOf(spec.kind);
    expect(jsExporterName(spec.otelName, type)).toBe(spec.prometheusName);
    expect(collectorName(spec.otelName, spec.unit, type)).toBe(spec.prometheusName);
    expect(collectorNameUtf8(spec.otelName.replace(/\./g, '_'), spec.unit, type)).toBe(spec.prometheusName);
  },
);

describe('what a register-instrumented app really exports', () => {
  let app: AppDir;
  let lab: Lab;

  beforeAll(async () => {
    app = makeAppDir();
    // Consecutive ids on the standalone stream, so the healthy resume records the skipped-events histogram too.
    lab = await startLab({ jsonResponse: true });
  }, 120_000);

  afterAll(async () => {
    await lab?.stop();
    app?.remove();
  });

  test('OTEL_METRICS_EXPORTER=prometheus,otlp: every OTLP metric, named the Collector way, is a family of the direct scrape', async () => {
    /** What this test reads of an OTLP/JSON metrics export. */
    interface OtlpJsonMetrics {
      resourceMetrics: {
        scopeMetrics: {
          scope: { name: string };
          metrics: { name: string; unit?: string; histogram?: object; sum?: { isMonotonic?: boolean } }[];
        }[];
      }[];
    }
    const payloads: OtlpJsonMetrics[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', c => (body += c));
      req.on('end', () => {
        if (req.url === '/v1/metrics') payloads.push(JSON.parse(body));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    const otlpPort = await new Promise<number>(resolve =>
      receiver.listen(0, '127.0.0.1', () => resolve((receiver.address() as { port: number }).port)),
    );
    const promPort = await leasePort();
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'client-app.cjs'],
      env: {
        ...(await labEnv(lab)),
        OTEL_METRICS_EXPORTER: 'prometheus,otlp',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `http://127.0.0.1:${otlpPort}/v1/metrics`,
        OTEL_METRIC_EXPORT_INTERVAL: '600000',
        OTEL_EXPORTER_PROMETHEUS_PORT: String(promPort),
      },
    });
    try {
      expect(await proc.done()).toMatchObject({ lost: 0, patched: true });
      const scraped = parseMetricFamilies(await scrapeText(promPort));
      // SIGTERM: register shuts the SDK down, which pushes the last OTLP export before the process goes.
      expect(await proc.stop('SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });

      const exported = payloads
        .flatMap(p => p.resourceMetrics)
        .flatMap(rm => rm.scopeMetrics)
        .filter(sm => sm.scope.name === 'forkwatch')
        .flatMap(sm => sm.metrics);
      const byName = new Map<string, { unit: string; type: OtlpMetricType }>();
      for (const m of exported) {
        const type: OtlpMetricType = m.histogram ? 'histogram' : m.sum?.isMonotonic ? 'monotonic_counter' : 'gauge';
        byName.set(m.name, { unit: m.unit ?? '', type });
      }
      // Counters and the info gauge are all there; of the histograms, the two a healthy resume on consecutive ids
      // records (its gap and its skipped events: 0). The 2026-07-28 client histograms record only per-request traffic,
      // which this session app does not send; the empty-reconnect streak only when a storm ends.
      const notRecordedHere = new Set<string>([
        METRICS.clientReissueDelaySeconds.otelName,
        METRICS.clientListenGapSeconds.otelName,
        METRICS.clientEmptyReconnectStreak.otelName,
      ]);
      const expected = METRIC_SPECS.filter(
        s => s.kind !== 'histogram' || (s.otelName.startsWith('forkwatch.client.') && !notRecordedHere.has(s.otelName)),
      );
      expect([...byName.keys()].sort()).toEqual(expected.map(s => s.otelName).sort());
      for (const [name, { unit, type }] of byName) {
        const viaCollector = collectorName(name, unit, type);
        expect(scraped.has(viaCollector), `${name} [${unit}] -> ${viaCollector}`).toBe(true);
        expect(scraped.get(viaCollector)!.type).toBe(type === 'monotonic_counter' ? 'counter' : type);
      }
      expect(byName.get('forkwatch.client.resume.gap_seconds')).toEqual({ unit: 's', type: 'histogram' });
      expect(collectorName('forkwatch.client.resume.gap_seconds', 's', 'histogram')).toBe(
        'forkwatch_client_resume_gap_seconds',
      );
      expect(scraped.get('forkwatch_client_resume_gap_seconds')?.seriesNames).toEqual(
        new Set([
          'forkwatch_client_resume_gap_seconds_count',
          'forkwatch_client_resume_gap_seconds_sum',
          'forkwatch_client_resume_gap_seconds_bucket',
        ]),
      );
      expect(proc.stdout()).toBe('');
      expect(proc.forkwatchLines()).toEqual([]);
    } finally {
      receiver.close();
    }
  });
});
