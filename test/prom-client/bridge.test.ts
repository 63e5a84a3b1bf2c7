/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch/prom-client: forkwatch's metrics in a prom-client Registry, exactly as the OpenTelemetry Prometheus
 * exporter writes them.
 *
 * End to end: one service process (run with `--require forkwatch/register`) is both sides of a real resume and exposes
 * its prom-client registry on its own /metrics; both endpoints are scraped from here and their forkwatch families
 * compared: names, types, HELP, label names and values (buckets included), and every sample's value.
 * In process: the other ways to wire the bridge (a reader in your own MeterProvider, an instrumentation without
 * register), OpenMetrics registries, and prom-client's Registry API.
 */
import { join } from 'node:path';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ForkwatchInstrumentation } from '../../src/lifecycle/instrumentation';
import { METRICS, METRIC_SPECS } from '../../src/shared/names';
import { ForkwatchMetricReader, registerForkwatchMetrics } from '../../src/prom-client';
import {
  type AppDir,
  type Lab,
  FIXTURES,
  type MetricFamily,
  leasePort,
  labEnv,
  makeAppDir,
  parseMetricFamilies,
  parseSamples,
  scrapeText,
  startApp,
  startLab,
} from '../register/support';

/** The forkwatch families of an exposition, in a form that compares as plain data. */
function forkwatchFamilies(
  text: string,
): Record<string, { type: string; help?: string; series: string[]; labels: Record<string, string[]> }> {
  const out: Record<string, { type: string; help?: string; series: string[]; labels: Record<string, string[]> }> = {};
  for (const [name, family] of parseMetricFamilies(text) as Map<string, MetricFamily>) {
    if (!name.startsWith('forkwatch_')) continue;
    out[name] = {
      type: family.type,
      help: family.help,
      series: [...family.seriesNames].sort(),
      labels: Object.fromEntries([...family.labels].map(([k, v]) => [k, [...v].sort()]).sort()),
    };
  }
  return out;
}

function forkwatchSamples(text: string): Map<string, number> {
  return new Map([...parseSamples(text)].filter(([key]) => key.startsWith('forkwatch_')));
}

describe('one process, both paths', () => {
  let app: AppDir;
  let lab: Lab;

  beforeAll(async () => {
    app = makeAppDir([FIXTURES, join(__dirname, 'fixtures')]);
    lab = await startLab();
  }, 120_000);

  afterAll(async () => {
    await lab?.stop();
    app?.remove();
  });

  test('the prom-client registry and the OpenTelemetry exporter expose identical forkwatch families and samples', async () => {
    const otelPort = await leasePort();
    const promClientPort = await leasePort();
    const proc = startApp({
      cwd: app.dir,
      args: ['--require', 'forkwatch/register', 'prom-client-app.cjs'],
      env: {
        ...(await labEnv(lab)),
        OTEL_EXPORTER_PROMETHEUS_PORT: String(otelPort),
        PROM_CLIENT_PORT: String(promClientPort),
      },
    });
    expect(await proc.done()).toMatchObject({ lost: 0, resumes: [200], patched: true });
    const [otelText, promClientText] = await Promise.all([scrapeText(otelPort), scrapeText(promClientPort)]);

    const otel = forkwatchFamilies(otelText);
    const promClient = forkwatchFamilies(promClientText);
    // Both sides of a resume happened in the process: every family forkwatch defines has samples on both paths,
    // but for the 2026-07-28 client histograms (observed only on per-request traffic) and the empty-reconnect streak
    // (observed only when a reconnect storm ends); the in-process test below renders them.
    const perRequestOnly = new Set<string>([
      METRICS.clientReissueDelaySeconds.prometheusName,
      METRICS.clientListenGapSeconds.prometheusName,
      METRICS.clientEmptyReconnectStreak.prometheusName,
    ]);
    expect(Object.keys(otel).sort()).toEqual(
      METRIC_SPECS.map(s => s.prometheusName)
        .filter(n => !perRequestOnly.has(n))
        .sort(),
    );
    for (const name of perRequestOnly) delete promClient[name];
    for (const family of Object.values(otel)) expect(family.series.length).toBeGreaterThan(0);
    expect(promClient).toEqual(otel);

    const otelSamples = forkwatchSamples(otelText);
    expect(forkwatchSamples(promClientText)).toEqual(otelSamples);
    // And the samples say what happened: one resume each side, the replay's gap, the client's gap.
    const one = (key: string) => expect(otelSamples.get(key), key).toBe(1);
    one(
      'forkwatch_client_resumes_total{otel_scope_name="forkwatch",otel_scope_version="0.1.0",outcome="resumed",transport="streamable_http"}',
    );
    one(
      'forkwatch_server_resumes_total{otel_scope_name="forkwatch",otel_scope_version="0.1.0",outcome="replayed",transport="streamable_http"}',
    );
    one('forkwatch_client_resume_gap_seconds_count{otel_scope_name="forkwatch",otel_scope_version="0.1.0"}');
    one('forkwatch_server_resume_gap_events_count{otel_scope_name="forkwatch",otel_scope_version="0.1.0"}');

    // The service's own metrics are still there, beside forkwatch's.
    expect(promClientText).toMatch(/^app_requests_total \d+$/m);
    expect(proc.stdout()).toBe('');
    expect(proc.forkwatchLines()).toEqual([]);
  });
});

describe('in process', () => {
  /** A MeterProvider with the OpenTelemetry exporter (not serving) and a forkwatch reader, and the instrumentation on it. */
  function setup() {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const reader = new ForkwatchMetricReader();
    const provider = new MeterProvider({ readers: [exporter, reader] });
    const instrumentation = new ForkwatchInstrumentation({ enabled: false });
    instrumentation.setMeterProvider(provider);
    const otelText = async () => new PrometheusSerializer().serialize((await exporter.collect()).resourceMetrics);
    return { exporter, reader, provider, instrumentation, otelText };
  }

  function record(instrumentation: ForkwatchInstrumentation) {
    const i = instrumentation.instruments;
    i.clientResumes.add(2, { transport: 'sse', outcome: 'forked' });
    i.clientForks.add(1, { transport: 'sse', reason: 'id_regressed' });
    i.clientResumeGapSeconds.record(0.3);
    i.clientResumeGapSeconds.record(42);
    i.clientResumeSkippedEvents.record(0);
    i.serverResumes.add(1, { transport: 'streamable_http', outcome: 'unknown_cursor' });
    i.serverResumeGapEvents.record(7);
    i.serverEvents.add(5, { transport: 'streamable_http' });
    i.clientReissueDelaySeconds.record(1.5);
    i.clientListenGapSeconds.record(0.2);
    i.serverExchanges.add(3, { outcome: 'delivered' });
    i.clientEmptyReconnectStreak.record(3);
  }

  test('{ reader } in your own MeterProvider: the registry renders what the OpenTelemetry exporter renders', async () => {
    const { reader, instrumentation, otelText, provider } = setup();
    const registry = new Registry();
    registerForkwatchMetrics(registry, { reader });
    record(instrumentation);
    const [otel, promClient] = [await otelText(), await registry.metrics()];
    expect(forkwatchFamilies(promClient)).toEqual(forkwatchFamilies(otel));
    expect(forkwatchSamples(promClient)).toEqual(forkwatchSamples(otel));
    expect(
      forkwatchSamples(promClient).get(
        'forkwatch_client_resume_gap_seconds_bucket{le="60",otel_scope_name="forkwatch",otel_scope_version="0.1.0"}',
      ),
    ).toBe(2);
    await provider.shutdown();
  });

  test('histograms without data: HELP and TYPE only (prom-client always prints them), no samples', async () => {
    const { reader, provider } = setup();
    const registry = new Registry();
    registerForkwatchMetrics(registry, { reader });
    const text = await registry.metrics();
    const families = parseMetricFamilies(text);
    expect(families.get('forkwatch_server_resume_gap_events')).toMatchObject({ type: 'histogram' });
    expect(families.get('forkwatch_server_resume_gap_events')!.seriesNames.size).toBe(0);
    // Counters start at 0 for every label combination, as on the OpenTelemetry path.
    expect(
      forkwatchSamples(text).get(
        'forkwatch_client_forks_total{otel_scope_name="forkwatch",otel_scope_version="0.1.0",reason="cursor_dropped",transport="sse"}',
      ),
    ).toBe(0);
    await provider.shutdown();
  });

  test('an OpenMetrics registry renames counters the way prom-client does for its own', async () => {
    const { reader, instrumentation, provider } = setup();
    // (prom-client's typings omit the constructor's content-type argument)
    const registry = new (Registry as unknown as new (type: string) => Registry)(Registry.OPENMETRICS_CONTENT_TYPE);
    registerForkwatchMetrics(registry, { reader });
    record(instrumentation);
    for (let scrape = 0; scrape < 2; scrape++) {
      const text = await registry.metrics();
      expect(text).toMatch(/^# TYPE forkwatch_client_resumes counter$/m);
      expect(text).toMatch(
        /^forkwatch_client_resumes_total\{transport="sse",outcome="forked",otel_scope_name="forkwatch",otel_scope_version="0.1.0"\} 2$/m,
      );
      expect(text).not.toMatch(/_total_total/);
      expect(text).toMatch(/^# TYPE forkwatch_client_resume_gap_seconds histogram$/m);
      expect(text.endsWith('# EOF\n')).toBe(true);
    }
    await provider.shutdown();
  });

  test("prom-client's Registry API: JSON, single metric, reset, merge, idempotent registration, unregister", async () => {
    const { reader, instrumentation, provider } = setup();
    const registry = new Registry();
    const bridge = registerForkwatchMetrics(registry, { reader });
    expect(registerForkwatchMetrics(registry, { reader })).toBe(bridge);
    record(instrumentation);

    const json = await registry.getMetricsAsJSON();
    const resumes = json.find(m => m.name === METRICS.clientResumes.prometheusName)!;
    expect(resumes.type).toBe('counter');
    expect(resumes.values).toContainEqual({
      value: 2,
      labels: { transport: 'sse', outcome: 'forked', otel_scope_name: 'forkwatch', otel_scope_version: '0.1.0' },
    });
    expect(await registry.getSingleMetricAsString('forkwatch_server_events_total')).toMatch(
      /forkwatch_server_events_total\{transport="streamable_http",.*\} 5$/,
    );

    registry.resetMetrics(); // forkwatch's values belong to the SDK: reset is a no-op
    expect(await registry.getSingleMetricAsString('forkwatch_server_events_total')).toMatch(/ 5$/);

    const merged = Registry.merge([registry, new Registry()]);
    expect(await merged.metrics()).toMatch(
      /^forkwatch_client_forks_total\{transport="sse",reason="id_regressed",.*\} 1$/m,
    );

    bridge.unregister();
    expect(await registry.metrics()).not.toMatch(/forkwatch_/);
    await provider.shutdown();
  });

  test('{ instrumentation } without forkwatch/register: prom-client gets the metrics and the global MeterProvider keeps them', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const globalProvider = new MeterProvider({ readers: [exporter] });
    metrics.setGlobalMeterProvider(globalProvider);
    const instrumentation = new ForkwatchInstrumentation({ enabled: false });
    instrumentation.setMeterProvider(metrics.getMeterProvider());
    const registry = new Registry();
    const bridge = registerForkwatchMetrics(registry, { instrumentation });
    expect(await bridge.reader).toBeInstanceOf(ForkwatchMetricReader);
    instrumentation.instruments.clientResumes.add(3, { transport: 'streamable_http', outcome: 'rejected' });

    const key =
      'forkwatch_client_resumes_total{otel_scope_name="forkwatch",otel_scope_version="0.1.0",outcome="rejected",transport="streamable_http"}';
    expect(forkwatchSamples(await registry.metrics()).get(key)).toBe(3);
    const otel = new PrometheusSerializer().serialize((await exporter.collect()).resourceMetrics);
    expect(forkwatchSamples(otel).get(key)).toBe(3);
    metrics.disable();
    await globalProvider.shutdown();
  });

  test('without register and without { instrumentation } or { reader }: a clear TypeError', () => {
    expect(() => registerForkwatchMetrics(new Registry())).toThrow(
      /Run the app with `--require forkwatch\/register`.*or pass \{ instrumentation \}/,
    );
    expect(() => registerForkwatchMetrics({} as Registry)).toThrow(/pass a prom-client Registry/);
  });
});
