/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The rule files are generated from one config (pack/config/config.ts): the committed ones are the defaults' output,
 * and a user's config (another cluster label, a selector, other links and SLO) reaches every expression. A rendering
 * with a renamed cluster label passes the two-cluster promtool test (relabelled to match).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { readdirSync } from 'node:fs';
import { renderPack } from '../../pack/compose';
import { DEFAULT_CONFIG, REPOSITORY_URL } from '../../pack/config/config';
import { resolveConfig } from '../../pack/config/resolve';
import { withDefaultRunbookLinks } from '../../pack/generate';
import type { RuleSpec } from '../../pack/alerts/rule-model';
import { renderRuleFiles, ruleFiles } from '../../pack/alerts/rule-files';
import { renderDashboards } from '../../pack/dashboards/render';
import { BIN, runTool } from '../support/prometheus';
import { analyzePromQL } from '../support/promql';

const ALERTS_DIR = join(__dirname, '../../alerts');

const USER = resolveConfig({
  selector: 'job=~"mcp|mcp-.*"',
  aggregationLabels: ['k8s_cluster', 'namespace'],
  clusterLabel: 'k8s_cluster',
  runbookUrlPattern: 'https://wiki.example.org/runbooks/forkwatch/%s',
  grafanaUrl: 'https://grafana.example.org/',
  dashboardUid: 'mcp-forks',
  clientResumeObjective: 0.999,
  severities: { page: 'page' },
});
const rulesOf = (config: typeof USER): RuleSpec[] => ruleFiles(config).flatMap(f => f.groups.flatMap(g => g.rules));

describe('the committed rule files', () => {
  test.each([...renderRuleFiles(DEFAULT_CONFIG)])(
    '%s is the output of the default config (npm run alerts)',
    (name, content) => {
      expect(readFileSync(join(ALERTS_DIR, name), 'utf8'), `alerts/${name} is stale: run npm run alerts`).toBe(content);
    },
  );
});

describe('a user config reaches every rule', () => {
  const rules = rulesOf(USER);

  test('every aggregation and every match keeps the configured labels, in every rule', () => {
    let lists = 0;
    for (const r of rules) {
      for (const m of r.expr.matchAll(/\b(by|on) \(([^)]*)\)/g)) {
        lists++;
        expect((m[2] as string).split(', ').slice(0, 3), `${r.alert ?? r.record}: ${m[0]}`).toEqual([
          'k8s_cluster',
          'namespace',
          'job',
        ]);
      }
    }
    expect(lists).toBeGreaterThan(60);
    expect(rules.map(r => r.expr).join('\n')).not.toMatch(/\bcluster\b/);
  });

  test('every raw series selector carries the selector; recorded series are already scoped', () => {
    let raw = 0;
    // The probe's rules read the probe's own job (config.probe.job, or a textfile's), not the MCP servers'.
    for (const r of rules.filter(r => !r.alert?.startsWith('ForkwatchProbe'))) {
      for (const sel of analyzePromQL(r.expr).selectors) {
        if (sel.name?.includes(':')) continue;
        raw++;
        expect(sel.matchers, `${r.alert ?? r.record}: ${sel.text}`).toContainEqual({
          label: 'job',
          op: '=~',
          value: 'mcp|mcp-.*',
        });
      }
    }
    expect(raw).toBeGreaterThan(30);
  });

  test('links, severities and the SLO come from the config', () => {
    const alerts = rules.filter(r => r.alert);
    for (const a of alerts) {
      expect(a.annotations?.runbook_url).toBe(`https://wiki.example.org/runbooks/forkwatch/${a.alert}`);
      expect(a.annotations?.dashboard_url).toBe('https://grafana.example.org/d/mcp-forks/mcp-forks');
    }
    const pages = alerts.filter(a => a.labels?.severity === 'page').map(a => a.alert);
    expect(new Set(pages)).toEqual(
      new Set([
        'ForkwatchResumeLossBudgetBurn',
        'ForkwatchServerDeliveryBudgetBurn',
        'ForkwatchServerResultDeliveryBudgetBurn',
        'ForkwatchServerCrossSessionReplay',
        'ForkwatchClientResultsLost',
      ]),
    );
    const clientBurn = alerts.find(a => a.alert === 'ForkwatchResumeLossBudgetBurn');
    expect(clientBurn?.expr).toContain('> (14.4 * 0.001)');
    expect(clientBurn?.annotations?.description).toContain(
      'above 1.44% (14.4x the 0.1% error budget of the 99.9% SLO)',
    );
    expect(alerts.find(a => a.alert === 'ForkwatchServerDeliveryBudgetBurn')?.expr).toContain('> (14.4 * 0.005)');
  });

  test('configs the rules cannot honour are refused', () => {
    expect(() => resolveConfig({ clusterLabel: 'region' })).toThrow(/clusterLabel/);
    expect(() => resolveConfig({ runbookUrlPattern: 'https://x/' })).toThrow(/%s/);
    expect(() => resolveConfig({ aggregationLabels: ['job'], clusterLabel: 'job' })).toThrow(/aggregationLabels/);
    expect(() => resolveConfig({ clientResumeObjective: 99.5 })).toThrow(/between 0 and 1/);
    expect(() => resolveConfig({ selecter: 'job="x"' } as never)).toThrow(/unknown config keys: selecter/);
  });
});

describe('promtool: the two-cluster test under a renamed cluster label', () => {
  /** alerts/tests/two-clusters.yml with `cluster` renamed `k8s_cluster`, the runbook links of USER and its dashboard link. */
  async function relabelledTest(): Promise<string> {
    const text = await readFile(join(ALERTS_DIR, 'tests/two-clusters.yml'), 'utf8');
    return (
      text
        .replace(/\bcluster="/g, 'k8s_cluster="')
        .replace(/\bcluster: /g, 'k8s_cluster: ')
        .replace(
          /https:\/\/github\.com\/forkwatch\/forkwatch\/blob\/[^/\s]+\/alerts\/runbooks\/(\w+)\.md/g,
          'https://wiki.example.org/runbooks/forkwatch/$1',
        )
        // The defaults emit no dashboard_url (no Grafana host); USER names one, so every alert gets it.
        .replace(
          /^( +)runbook_url: (\S+)$/gm,
          '$1runbook_url: $2\n$1dashboard_url: https://grafana.example.org/d/mcp-forks/mcp-forks',
        )
        .replace(/severity: critical/g, 'severity: page')
        .replace(
          /above 7\.2% \(14\.4x the 0\.5% error budget of the 99\.5% SLO\)/g,
          'above 1.44% (14.4x the 0.1% error budget of the 99.9% SLO)',
        )
    );
  }

  async function runWith(config: typeof USER): Promise<{ code: number | null; out: string }> {
    const dir = await mkdtemp(join(tmpdir(), 'forkwatch-render-'));
    try {
      for (const [name, content] of renderRuleFiles(config)) await writeFile(join(dir, name), content);
      await writeFile(join(dir, 'two-clusters.yml'), (await relabelledTest()).replace(/\.\.\//g, ''));
      const res = await runTool(BIN.promtool, ['test', 'rules', 'two-clusters.yml'], { cwd: dir });
      return { code: res.code, out: res.stdout + res.stderr };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  test('rules rendered with clusterLabel k8s_cluster keep the clusters apart', async () => {
    const res = await runWith(USER);
    expect(res.code, res.out).toBe(0);
    expect(res.out).toContain('SUCCESS');
  });

  test('the default rules (cluster) merge those clusters: the test notices', async () => {
    const res = await runWith(
      resolveConfig({ ...USER, aggregationLabels: ['cluster', 'namespace'], clusterLabel: 'cluster' }),
    );
    expect(res.code, res.out).not.toBe(0);
    expect(res.out).toMatch(/one alert per cluster|once per cluster/);
  });
});

describe('runbook links that work after import (issue 51)', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
  const alertsOf = (config: typeof USER) => rulesOf(config).filter(r => r.alert);
  /** Every runbook link of a rendered pack: the alerts' annotations and the dashboard's header and panel links. */
  const dashboardLinks = (config: typeof USER): string[] => {
    const d = JSON.parse([...renderDashboards(config).values()][0] ?? '{}');
    const panels = (d.panels ?? []) as { links?: { title: string; url: string }[] }[];
    return [
      ...(d.links ?? []).map((l: { url: string }) => l.url),
      ...panels.flatMap(p => (p.links ?? []).filter(l => !l.title.startsWith('Traces:')).map(l => l.url)),
    ];
  };

  test("the defaults: this version's tag of the repository, whose runbooks exist and ship in the package", () => {
    expect(`git+${REPOSITORY_URL}.git`).toBe(pkg.repository.url);
    const base = `${REPOSITORY_URL}/blob/v${pkg.version}/alerts/runbooks/`;
    expect(DEFAULT_CONFIG.runbookBaseUrl).toBe(base);
    const alerts = alertsOf(DEFAULT_CONFIG);
    expect(alerts.length).toBeGreaterThan(20);
    const shipped = new Set(readdirSync(join(ALERTS_DIR, 'runbooks')));
    for (const a of alerts) {
      expect(a.annotations?.runbook_url).toBe(`${base}${a.alert}.md`);
      expect(shipped.has(`${a.alert}.md`), a.alert).toBe(true);
    }
    expect(pkg.files).toContain('alerts/runbooks/*.md');
    const links = dashboardLinks(DEFAULT_CONFIG);
    expect(links.filter(l => l === base).length).toBeGreaterThan(5); // the header and every panel's index link
    for (const l of links) expect(l.startsWith(base), l).toBe(true);
  });

  /**
   * The promtool unit tests: the YAML files of alerts/tests, not the `.order-*` folders promtool.test.ts makes there
   * while it runs (read as files, they failed this test with EISDIR whenever the two files ran at once).
   */
  const unitTestFiles = () => readdirSync(join(ALERTS_DIR, 'tests')).filter(f => /^[^.].*\.ya?ml$/.test(f));

  test('no committed output, promtool test or rendered file names a branch', () => {
    const committed = [
      ...readdirSync(ALERTS_DIR)
        .filter(f => f.endsWith('.yml'))
        .map(f => join(ALERTS_DIR, f)),
      ...unitTestFiles().map(f => join(ALERTS_DIR, 'tests', f)),
      join(__dirname, '../../dashboards/forkwatch-overview.json'),
    ];
    for (const file of committed) expect(readFileSync(file, 'utf8'), file).not.toMatch(/\/(blob|tree)\/main\//);
    for (const [name, content] of renderPack(DEFAULT_CONFIG))
      expect(content, name).not.toMatch(/\/(blob|tree)\/main\//);
    // The promtool unit tests expect exactly the default links (npm run alerts keeps them in step).
    for (const f of unitTestFiles()) {
      const text = readFileSync(join(ALERTS_DIR, 'tests', f), 'utf8');
      expect(withDefaultRunbookLinks(text), `alerts/tests/${f}: run npm run alerts`).toBe(text);
    }
    expect(withDefaultRunbookLinks(`runbook_url: ${REPOSITORY_URL}/blob/main/alerts/runbooks/ForkwatchX.md`)).toBe(
      `runbook_url: ${DEFAULT_CONFIG.runbookBaseUrl}ForkwatchX.md`,
    );
  });

  test("a runbookBaseUrl of one's own: every alert, the dashboard and the pack's links.md use it", () => {
    const base = 'https://wiki.example.org/sre/forkwatch/';
    const config = resolveConfig({ runbookBaseUrl: base });
    for (const a of alertsOf(config)) expect(a.annotations?.runbook_url).toBe(`${base}${a.alert}.md`);
    const links = dashboardLinks(config);
    expect(links.length).toBeGreaterThan(10);
    for (const l of links) expect(l.startsWith(base), l).toBe(true);
    const pack = renderPack(config);
    expect(pack.get('links.md')).toContain(`- Runbooks: ${base}\n`);
    expect(pack.get('links.md')).toContain(`| ForkwatchForksDetected | ${base}ForkwatchForksDetected.md |`);
    expect(JSON.parse(pack.get('mixin/config.json') ?? '{}').runbookBaseUrl).toBe(base);
  });

  test('the pattern and index overrides win over the base; a base that is no folder URL is refused', () => {
    const config = resolveConfig({
      runbookBaseUrl: 'https://ignored.example.org/',
      runbookUrlPattern: 'https://wiki.example.org/display/SRE/Forkwatch+%s',
      runbooksIndexUrl: 'https://wiki.example.org/display/SRE/Forkwatch',
    });
    for (const a of alertsOf(config))
      expect(a.annotations?.runbook_url).toBe(`https://wiki.example.org/display/SRE/Forkwatch+${a.alert}`);
    expect(dashboardLinks(config)).toContain('https://wiki.example.org/display/SRE/Forkwatch');
    expect(dashboardLinks(config).some(l => l.includes('ignored'))).toBe(false);
    expect(() => resolveConfig({ runbookBaseUrl: 'https://wiki.example.org/runbooks' })).toThrow(/ending in \//);
    expect(() => resolveConfig({ runbookBaseUrl: 'runbooks/' })).toThrow(/runbookBaseUrl/);
    // With both overrides the base is not used, so any value passes.
    expect(() =>
      resolveConfig({ runbookBaseUrl: '', runbookUrlPattern: 'https://w/%s', runbooksIndexUrl: 'https://w/' }),
    ).not.toThrow();
  });
});

describe('alerts/README.md', () => {
  const readme = readFileSync(join(ALERTS_DIR, 'README.md'), 'utf8');
  const section = (heading: string) => readme.split(/^## /m).find(s => s.startsWith(`${heading}\n`)) ?? '';

  test('the config table names every config key', () => {
    const table = section('Config');
    for (const key of Object.keys(DEFAULT_CONFIG)) expect(table, key).toMatch(new RegExp(`^\\| [^|]*\`${key}\``, 'm'));
  });

  test('the alerts table lists every alert with a link to its runbook', () => {
    const table = section('Alerts');
    const alerts = new Set(rulesOf(DEFAULT_CONFIG).flatMap(r => r.alert ?? []));
    expect(alerts.size).toBeGreaterThan(10);
    for (const a of alerts) expect(table, a).toContain(`| [\`${a}\`](runbooks/${a}.md) |`);
  });
});

describe('a config without aggregation labels (one Prometheus per environment)', () => {
  const config = resolveConfig({ aggregationLabels: [] });

  test('rules aggregate by job alone, and the dashboard has no cluster variable', () => {
    for (const r of rulesOf(config)) {
      for (const m of r.expr.matchAll(/\b(by|on) \(([^)]*)\)/g))
        expect((m[2] as string).split(', ')[0], r.alert ?? r.record).toBe('job');
    }
    const dashboard = JSON.parse([...renderDashboards(config).values()][0] ?? '{}');
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toEqual([
      'prometheus_datasource',
      'tempo_datasource',
      'job',
      'instance',
    ]);
  });
});
