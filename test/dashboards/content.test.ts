/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What the issue asks of the overview, panel by panel. */
import { describe, expect, test } from 'vitest';
import { type Panel, loadDashboard, panelsOf, queriesOf } from './dashboard-model';
import { SAMPLE_DURATIONS, analyse } from './promql';

const overview = loadDashboard('forkwatch-overview.json');
const panels = panelsOf(overview);

function panel(title: string): Panel {
  const found = panels.find(p => p.title === title);
  if (!found) throw new Error(`no panel "${title}"`);
  return found;
}
const exprs = (p: Panel) => (p.targets ?? []).map(t => t.expr ?? '');
const metricsOf = (p: Panel) => exprs(p).flatMap(e => analyse(e).selectors.map(s => s.metric));

describe('overview dashboard content', () => {
  test('variables: the Prometheus and Tempo data sources, cluster, namespace, job, instance', () => {
    const vars = (overview.templating?.list ?? []).map(v => `${v.type}:${v.name}`);
    expect(vars).toEqual([
      'datasource:prometheus_datasource',
      'datasource:tempo_datasource',
      'query:cluster',
      'query:namespace',
      'query:job',
      'query:instance',
    ]);
  });

  test('every range is $__rate_interval or $__range, never a fixed window', () => {
    const allowed = [SAMPLE_DURATIONS.__rate_interval, SAMPLE_DURATIONS.__range];
    const fixed = queriesOf(overview).flatMap(q => analyse(q.expr).ranges.filter(r => !allowed.includes(r.range)));
    expect(fixed).toEqual([]);
  });

  test('every description ends with what on-call should do, in bold', () => {
    for (const p of panels) expect(p.description, p.title).toMatch(/\*\*[^*]+\*\*/);
  });

  test('fork rate by reason and transport', () => {
    const p = panel('Fork rate by reason and transport');
    expect(exprs(p)[0]).toMatch(/^sum by \(transport, reason\) \(rate\(forkwatch_client_forks_total\{/);
    expect(p.targets?.[0]?.legendFormat).toBe('{{reason}} ({{transport}})');
  });

  test('resume outcomes as a share of all resumes', () => {
    const p = panel('Resume outcomes (share of all resumes)');
    expect(p.fieldConfig?.defaults?.unit).toBe('percentunit');
    expect(exprs(p)[0]).toContain('group_left');
  });

  test('"2xx resumes" beside "lossless resumes"', () => {
    const p = panel('2xx resumes vs lossless resumes');
    expect(p.targets?.map(t => t.legendFormat)).toEqual(['2xx resumes', 'lossless resumes']);
    expect(exprs(p)[0]).toContain('outcome=~"resumed|forked"');
    expect(exprs(p)[1]).toContain('outcome="resumed"');
  });

  test.each([
    ['Resume gap time (client)', 'forkwatch_client_resume_gap_seconds_bucket', 's'],
    ['Skipped events on resume (client)', 'forkwatch_client_resume_skipped_events_bucket', 'short'],
  ])('%s is a heatmap of Prometheus buckets', (title, bucket, unit) => {
    const p = panel(title);
    expect(p.type).toBe('heatmap');
    expect(p.targets?.[0]?.format).toBe('heatmap');
    expect(metricsOf(p)).toEqual([bucket]);
    expect(p.options?.yAxis?.unit).toBe(unit);
  });

  test('server replay sizes, server outcomes per instance, duplicates, firing alerts', () => {
    expect(metricsOf(panel('Server replay size'))).toContain('forkwatch_server_resume_gap_events_bucket');
    expect(exprs(panel('Server resume outcomes per instance'))[0]).toMatch(/^sum by \(instance, outcome\)/);
    expect(exprs(panel('Unknown-cursor share per instance'))[0]).toMatch(/^sum by \(cluster, job, instance\)/);
    expect(metricsOf(panel('Duplicate events (client)'))).toEqual([
      'forkwatch_client_duplicate_events_total',
      'forkwatch_client_foreign_responses_total',
    ]);
    expect(metricsOf(panel('Firing alerts and their runbooks'))).toEqual(['ALERTS', 'ALERTS']);
    expect(overview.annotations?.list?.[0]?.expr).toContain('alertname=~"Forkwatch.*"');
  });

  test('the SLO panel is the one that reads recording rules', () => {
    const readers = panels.filter(p => metricsOf(p).some(m => m?.includes(':')));
    expect(readers.map(p => p.title)).toEqual([
      'Lossy share of 2xx resumes (SLO windows)',
      'Lost share of events written (SLO windows)',
      'Results lost after the client left (SLO windows)',
    ]);
  });

  test('SLO panels filter on the cluster and namespace variables, and draw one line per cluster and job', () => {
    for (const title of ['Lossy share of 2xx resumes (SLO windows)', 'Lost share of events written (SLO windows)']) {
      const p = panel(title);
      for (const e of exprs(p))
        expect(e, title).toMatch(/\{cluster=~"\$cluster", namespace=~"\$namespace", job=~"\$job"\}$/);
      expect(p.targets?.[0]?.legendFormat).toBe('{{cluster}} {{job}} 5m');
    }
  });

  test('server delivery: undelivered events by reason, the delivery SLO windows, no-listener share per instance', () => {
    const byReason = panel('Undelivered events by reason');
    expect(exprs(byReason)[0]).toMatch(/^sum by \(reason\) \(rate\(forkwatch_server_undelivered_events_total\{/);
    expect(exprs(panel('Lost share of events written (SLO windows)'))[0]).toMatch(
      /^job:forkwatch_server_undelivered_loss:ratio_rate5m\{/,
    );
    expect(exprs(panel('Events without a listener per instance'))[0]).toContain('reason="no_listener"');
  });

  test('the unverified share: unverified over every 2xx outcome, and the SLO panels leave unverified out', () => {
    const [e] = exprs(panel('Unverified share of 2xx resumes'));
    expect(e).toContain('outcome="unverified"');
    expect(e).toContain('outcome=~"resumed|unverified|forked|inconclusive"');
    expect(exprs(panel('2xx resumes vs lossless resumes'))[0]).not.toContain('unverified');
    expect(exprs(panel('Lossless share of 2xx resumes'))[0]).not.toContain('unverified');
  });

  test('fork and unknown-cursor panels link to the traces behind them (Tempo search by span attributes)', () => {
    const traceLinks = (title: string) =>
      (panel(title).links ?? []).filter(l => l.title?.startsWith('Traces:')).map(l => decodeURIComponent(l.url ?? ''));
    for (const title of ['Forked resumes', 'Fork rate by reason and transport']) {
      expect(traceLinks(title).join(), title).toContain(
        '{ name = \\"forkwatch.client.resume\\" && span.forkwatch.resume.verdict = \\"forked\\" }',
      );
    }
    for (const title of [
      'Unknown cursors on servers',
      'Unknown-cursor share per instance',
      'Server resume outcomes per instance',
      'Undelivered events by reason',
    ]) {
      expect(traceLinks(title).join(), title).toContain('span.forkwatch.replay.outcome = \\"unknown_cursor\\"');
    }
    expect(traceLinks('Forked resumes')[0]).toContain('"range":{"from":"${__from}","to":"${__to}"}');
  });
});
