/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The pack's root (pack/): every threshold, window and `for` is a config field whose value reaches the expression
 * and the description; links to a host appear only when the config names one; the folders import in one direction.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ruleFiles } from '../../pack/alerts/rule-files';
import type { RuleSpec } from '../../pack/alerts/rule-model';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { ConfigError, resolveConfig } from '../../pack/config/resolve';

const PACK = join(__dirname, '../../pack');
const alertsOf = (config = DEFAULT_CONFIG): RuleSpec[] =>
  ruleFiles(config).flatMap(f => f.groups.flatMap(g => g.rules.filter(r => r.alert)));
const one = (rules: RuleSpec[], name: string) => {
  const found = rules.filter(r => r.alert === name);
  expect(found, name).toHaveLength(1);
  return found[0] as RuleSpec;
};

describe('thresholds are config fields', () => {
  const tuned = resolveConfig({
    rateWindow: '10m',
    alerts: {
      ForkwatchForksDetected: { window: '30m', for: '5m' },
      ForkwatchServerUnknownCursors: { share: 0.2, minResumes: 50 },
      ForkwatchResumeGapSecondsHigh: { seconds: 90, quantile: 0.95 },
      ForkwatchResumeGapEventsHigh: { events: 5000 },
      ForkwatchServerEventsWithoutListener: { window: '2h', share: 0.03, minEvents: 400 },
      ForkwatchTargetWithoutMetrics: { lookback: '7d' },
      ForkwatchMetricsAbsent: { for: '30m' },
    },
    probe: { alerts: { ForkwatchProbeStale: { window: '2h' }, ForkwatchProbeNotResumable: { for: '10m' } } },
  });
  const rules = alertsOf(tuned);

  test('every alert besides the burn-rate ones has its entry in config.alerts', () => {
    const names = new Set(alertsOf().map(r => r.alert as string));
    names.delete('ForkwatchResumeLossBudgetBurn');
    names.delete('ForkwatchServerDeliveryBudgetBurn');
    names.delete('ForkwatchServerResultDeliveryBudgetBurn');
    const configured = { ...DEFAULT_CONFIG.alerts, ...DEFAULT_CONFIG.probe.alerts };
    expect(Object.keys(configured).sort()).toEqual([...names].sort());
    for (const [name, t] of Object.entries(configured)) expect(one(alertsOf(), name).for).toBe(t.for);
  });

  test('a tuned value reaches the expression, the `for` and the description', () => {
    const forks = one(rules, 'ForkwatchForksDetected');
    expect(forks.expr).toContain('[30m]');
    expect(forks.expr).toContain('offset 30m');
    expect(forks.for).toBe('5m');
    expect(forks.annotations?.description).toContain('in the last 30 minutes');
    expect(one(rules, 'ForkwatchServerUnknownCursors').expr).toContain('rate10m{outcome!="probe_rejected"})\n> 0.2\n');
    // The floor counts resumes over the tuned window: 600 s.
    expect(one(rules, 'ForkwatchServerUnknownCursors').expr).toMatch(/\* 600 >= 50\n$/);
    expect(one(rules, 'ForkwatchProbeStale').expr).toContain('> 7200\n');
    expect(one(rules, 'ForkwatchProbeStale').annotations?.description).toContain('in the last 2 hours');
    expect(one(rules, 'ForkwatchProbeNotResumable').for).toBe('10m');
    expect(one(rules, 'ForkwatchServerUnknownCursors').annotations?.description).toContain('over the last 10 minutes');
    const gap = one(rules, 'ForkwatchResumeGapSecondsHigh');
    expect(gap.expr).toBe('histogram_quantile(0.95, job:forkwatch_client_resume_gap_seconds_bucket:rate10m) > 90');
    expect(gap.annotations?.description).toContain('the p95 time');
    expect(gap.annotations?.description).toContain('(threshold 90s)');
    expect(one(rules, 'ForkwatchResumeGapEventsHigh').annotations?.description).toContain('(threshold 5000)');
    const listener = one(rules, 'ForkwatchServerEventsWithoutListener');
    expect(listener.expr).toContain('[2h]');
    expect(listener.expr).toContain('> 0.03\n');
    expect(listener.expr).toContain('>= 400\n');
    expect(listener.annotations?.description).toContain('in the last 2 hours');
    expect(listener.annotations?.description).toContain('(threshold 3%)');
    expect(one(rules, 'ForkwatchTargetWithoutMetrics').expr).toContain('[7d]');
    expect(one(rules, 'ForkwatchTargetWithoutMetrics').annotations?.description).toContain('within the last 7 days');
    expect(one(rules, 'ForkwatchMetricsAbsent').annotations?.description).toContain('series for 30 minutes');
    const records = ruleFiles(tuned).flatMap(f => f.groups.flatMap(g => g.rules.flatMap(r => r.record ?? [])));
    expect(records).toContain('job_instance:forkwatch_server_resumes:rate10m');
    expect(records.filter(r => r.endsWith(':rate5m'))).toEqual([]);
  });

  test('no threshold of the defaults is written as a literal in pack/alerts', () => {
    const sources = readdirSync(join(PACK, 'alerts')).map(f => readFileSync(join(PACK, 'alerts', f), 'utf8'));
    for (const text of sources) {
      expect(text).not.toMatch(/\[(5m|10m|1h|1d)\]/);
      expect(text).not.toMatch(/> (0\.05|30|1000)\b/);
      expect(text).not.toMatch(/for: '\d+[smhd]'/);
    }
  });
});

describe('links that need a host', () => {
  test('no dashboard_url without a grafanaUrl; every alert has one with it', () => {
    for (const r of alertsOf()) expect(r.annotations?.dashboard_url, r.alert).toBeUndefined();
    for (const r of alertsOf(resolveConfig({ grafanaUrl: 'https://grafana.example.org/' })))
      expect(r.annotations?.dashboard_url).toBe('https://grafana.example.org/d/forkwatch-overview/forkwatch-overview');
  });
});

describe('config errors', () => {
  const problems = (user: unknown) => {
    try {
      resolveConfig(user as never);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
    return [];
  };

  test('each problem is one line naming its path', () => {
    const found = problems({
      aggregationLabels: 'cluster',
      alerts: { ForkwatchForksDetected: { window: 'ten minutes', windw: '5m' } },
      kubernetes: { labels: { team: 3 } },
      burnWindows: [{ long: '1h', short: '5m', factor: 14.4, for: '2m', severity: 'page' }],
    });
    expect(found).toEqual([
      'unknown config keys: alerts.ForkwatchForksDetected.windw',
      'aggregationLabels: expected an array, got a string',
      'kubernetes.labels.team: expected a string, got a number',
      'burnWindows[0]: missing minEvents',
    ]);
    for (const p of found) expect(p).not.toContain('\n');
    expect(problems({ alerts: { ForkwatchForksDetected: { window: 'ten minutes' } } })).toEqual([
      'alerts.ForkwatchForksDetected.window: windows are one number and unit (5m, 1h, 3d), not "ten minutes"',
    ]);
    expect(problems({ alerts: { ForkwatchServerUnknownCursors: { share: 5 } } })).toEqual([
      'alerts.ForkwatchServerUnknownCursors.share: a share between 0 and 1, not 5',
    ]);
  });

  test('a partial nested object keeps the other defaults', () => {
    const config = resolveConfig({ alerts: { ForkwatchForksDetected: { for: '3m' } } });
    expect(config.alerts.ForkwatchForksDetected).toEqual({ window: '10m', for: '3m' });
    expect(config.alerts.ForkwatchMetricsAbsent).toEqual(DEFAULT_CONFIG.alerts.ForkwatchMetricsAbsent);
  });
});

describe('the folders of pack/', () => {
  /** folder -> the pack folders its files import (pack-relative; '.' is the root's composer files). */
  function folderImports(): Map<string, Set<string>> {
    const edges = new Map<string, Set<string>>();
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.ts')) {
          const from = relative(PACK, dir).split('/')[0] || '.';
          for (const m of readFileSync(path, 'utf8').matchAll(/from '(\.[^']+)'/g)) {
            const target = relative(PACK, resolve(dirname(path), m[1] as string));
            if (target.startsWith('..')) continue; // src/shared/names and the like
            const to = target.includes('/') ? (target.split('/')[0] as string) : '.';
            if (to !== from) edges.set(from, (edges.get(from) ?? new Set()).add(to));
          }
        }
      }
    };
    walk(PACK);
    return edges;
  }

  test('import in one direction: config <- alerts <- dashboards <- outputs <- the composer', () => {
    const order = ['config', 'alerts', 'dashboards', 'outputs', '.'];
    const edges = folderImports();
    expect(edges.size).toBeGreaterThan(2);
    for (const [from, tos] of edges) {
      expect(order, from).toContain(from);
      for (const to of tos) expect(order.indexOf(to), `${from} imports ${to}`).toBeLessThan(order.indexOf(from));
    }
  });
});
