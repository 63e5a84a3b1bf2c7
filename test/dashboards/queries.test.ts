/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { METRICS, METRIC_SPECS, type MetricSpec } from '../../src/shared/names';
import { type LabTarget, startLabTarget } from '../support/lab-target';
import { scrapeExporter } from '../support/probe-scrape';
import { parseMetricFamilies, scrapeMetricFamilies, seriesNamesByType } from '../support/scrape';
import { loadDashboard, queriesOf } from './dashboard-model';
import { analyse, analyseLabelValues } from './promql';
import { loadRules, recordedNames } from './rule-files';

/**
 * The 2026-07-28 client histograms: observed only on per-request traffic, which the fork lab does not run, so the
 * scrape has no series for them (test/per-request/ observes them on the real 2.x packages); panels do not draw them.
 */
const PER_REQUEST_ONLY = new Set<string>([
  METRICS.clientReissueDelaySeconds.prometheusName,
  METRICS.clientListenGapSeconds.prometheusName,
  // Recorded only when a reconnect storm ends, which the fork lab target does not play.
  METRICS.clientEmptyReconnectStreak.prometheusName,
]);

const overview = loadDashboard('forkwatch-overview.json');
const queries = queriesOf(overview);
const variableQueries = (overview.templating?.list ?? []).filter(v => v.type === 'query');

/** A metric's series names as scraped: histograms as _bucket, _sum and _count. */
const seriesOf = (spec: MetricSpec) =>
  spec.kind === 'histogram' ? ['_bucket', '_sum', '_count'].map(s => spec.prometheusName + s) : [spec.prometheusName];

/** Series names Prometheus itself writes. */
const PROMETHEUS_SERIES = ['ALERTS', 'ALERTS_FOR_STATE', 'up'];

describe('every dashboard query parses with @prometheus-io/lezer-promql', () => {
  test('the parser reports a broken query (so a clean parse means something)', () => {
    expect(analyse('sum by (job (rate(x_total[$__rate_interval]))').syntaxErrors).not.toEqual([]);
    expect(analyse('rate(x_total{job=~"$job"}[$__rate_interval])').syntaxErrors).toEqual([]);
  });

  test.each(queries.map(q => [`${q.where}${q.targetIdx ? ` #${q.targetIdx}` : ''}`, q.expr]))('%s', (_, expr) => {
    const a = analyse(expr);
    expect(a.syntaxErrors).toEqual([]);
    expect(a.selectors.length).toBeGreaterThan(0);
  });

  test.each(variableQueries.map(v => [v.name, v.query ?? '']))('variable %s', (_, query) => {
    const parsed = analyseLabelValues(query);
    if ('error' in parsed) throw new Error(parsed.error);
    expect(parsed.selector?.syntaxErrors ?? []).toEqual([]);
  });
});

describe('every metric name is in a real scrape of the fork lab or recorded by the rules', () => {
  let target: LabTarget;
  const known = new Set<string>(PROMETHEUS_SERIES);
  const exported = new Set<string>();

  beforeAll(async () => {
    target = await startLabTarget('forked');
    await target.runScenario();
    for (const s of seriesNamesByType(await scrapeMetricFamilies(target.metricsUrl)).keys()) exported.add(s);
    for (const s of [...exported, ...recordedNames(loadRules())]) known.add(s);
    // The probe row reads forkwatch exporter's series: a real scrape of it, too.
    for (const s of seriesNamesByType(parseMetricFamilies(await scrapeExporter())).keys()) known.add(s);
  });
  afterAll(() => target?.stop());

  test('the scrape holds every forkwatch metric family of src/shared/names.ts', () => {
    for (const spec of METRIC_SPECS.filter(s => !PER_REQUEST_ONLY.has(s.prometheusName)))
      expect(exported, spec.prometheusName).toContain(seriesOf(spec)[0]);
  });

  test('panels and annotations name only known series', () => {
    expect(known.has('forkwatch_client_forks')).toBe(false);
    const unknown = queries.flatMap(q =>
      analyse(q.expr).selectors.flatMap(s => (s.metric && !known.has(s.metric) ? [`${q.where}: ${s.metric}`] : [])),
    );
    expect(unknown).toEqual([]);
  });

  test('{__name__=~…} selectors of the variables match exported series', () => {
    for (const v of variableQueries) {
      const parsed = analyseLabelValues(v.query ?? '');
      if ('error' in parsed) throw new Error(parsed.error);
      const nameRegex = parsed.selector?.selectors[0]?.matchers.find(m => m.name === '__name__' && m.op === '=~');
      expect(nameRegex, v.name).toBeDefined();
      const matching = [...exported].filter(s => new RegExp(`^(?:${nameRegex?.value})$`).test(s));
      expect(matching.length, v.name).toBeGreaterThan(0);
    }
  });

  test('every forkwatch metric is on the dashboard', () => {
    const used = new Set(queries.flatMap(q => analyse(q.expr).selectors.flatMap(s => s.metric ?? [])));
    for (const spec of METRIC_SPECS.filter(s => !PER_REQUEST_ONLY.has(s.prometheusName))) {
      expect(
        seriesOf(spec).some(n => used.has(n)),
        spec.prometheusName,
      ).toBe(true);
    }
  });

  test('label values in matchers are values the instrumentation can emit', () => {
    expect(impossibleLabelValues('rate(forkwatch_server_resumes_total{outcome="unknown_cursors"}[1m])')).toEqual([
      'forkwatch_server_resumes_total{outcome="unknown_cursors"}',
    ]);
    expect(queries.flatMap(q => impossibleLabelValues(q.expr).map(bad => `${q.where}: ${bad}`))).toEqual([]);
  });
});

/** Matchers on forkwatch labels whose values src/shared/names.ts says the instrumentation never emits. */
function impossibleLabelValues(expr: string): string[] {
  const bad: string[] = [];
  for (const s of analyse(expr).selectors) {
    const spec = METRIC_SPECS.find(m => s.metric === m.prometheusName);
    for (const m of s.matchers) {
      const allowed = spec?.labels[m.name];
      if (!allowed || m.value.includes('$')) continue;
      const values = m.op.endsWith('~') ? m.value.split('|') : [m.value];
      for (const v of values) if (!allowed.includes(v)) bad.push(`${s.metric}{${m.name}="${v}"}`);
    }
  }
  return bad;
}
