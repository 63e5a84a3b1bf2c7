/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ALERT, LOSS_BUDGET } from '../../pack/alerts/names';
import { ruleFiles } from '../../pack/alerts/rule-files';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { runbooksIndexUrl } from '../../pack/config/links';
import { resolveConfig } from '../../pack/config/resolve';
import { loadDashboard, panelsOf, queriesOf } from './dashboard-model';
import { analyse } from './promql';
import { ALERTS_DIR, alertNames, loadRules, recordedNames } from './rule-files';

const overview = loadDashboard('forkwatch-overview.json');
const rules = loadRules();
const RUNBOOK_URL = /^https:\/\/github\.com\/forkwatch\/forkwatch\/blob\/v\d+\.\d+\.\d+\/alerts\/runbooks\/(\w+)\.md$/;

describe('dashboard ↔ alerting pack', () => {
  test('the alerting pack is there to cross-check (alerts/*.rules.yml)', () => {
    expect(alertNames(rules).size).toBeGreaterThan(0);
    expect(recordedNames(rules).size).toBeGreaterThan(0);
  });

  test('the dashboard knows exactly the Forkwatch alerts the rules define', () => {
    expect([...alertNames(rules)].sort()).toEqual(Object.values(ALERT).sort());
  });

  test('every runbook a panel links to exists in alerts/runbooks/', () => {
    const links = panelsOf(overview).flatMap(p => (p.links ?? []).map(l => l.url ?? ''));
    const runbooks = links.flatMap(url => RUNBOOK_URL.exec(url)?.[1] ?? []);
    expect(runbooks.length).toBeGreaterThan(5);
    for (const name of new Set(runbooks)) {
      expect(existsSync(join(ALERTS_DIR, 'runbooks', `${name}.md`)), `alerts/runbooks/${name}.md`).toBe(true);
    }
    expect(links.filter(url => url === runbooksIndexUrl(DEFAULT_CONFIG)).length).toBe(panelsOf(overview).length);
  });

  test('every recording rule a panel reads is recorded by the alerting pack', () => {
    const used = queriesOf(overview).flatMap(q => analyse(q.expr).selectors.flatMap(s => s.metric ?? []));
    const recorded = used.filter(name => name.includes(':'));
    expect(recorded.length).toBeGreaterThan(0);
    for (const name of recorded) expect(recordedNames(rules), name).toContain(name);
  });

  test("every alert's dashboard_url opens this dashboard, when the config names a Grafana host", () => {
    // The committed defaults name none, so they carry no link to a placeholder host.
    for (const r of rules.filter(x => x.alert)) expect(r.annotations?.dashboard_url, r.alert).toBeUndefined();
    const withHost = resolveConfig({ grafanaUrl: 'https://grafana.example.org' });
    const alerts = ruleFiles(withHost).flatMap(f => f.groups.flatMap(g => g.rules.filter(x => x.alert)));
    expect(alerts.length).toBe(rules.filter(x => x.alert).length);
    for (const r of alerts) {
      expect(r.annotations?.dashboard_url, r.alert).toMatch(new RegExp(`/d/${overview.uid}(/|$)`));
    }
  });

  test("the SLO panel's error-budget line is the budget the burn-rate alerts use", () => {
    const burn = rules.filter(r => r.alert === ALERT.lossBudgetBurn);
    expect(burn.length).toBeGreaterThan(0);
    for (const r of burn) {
      const budgets = [...r.expr.matchAll(/\(\s*[\d.]+\s*\*\s*([\d.]+)\s*\)/g)].map(m => Number(m[1]));
      expect(budgets.length).toBeGreaterThan(0);
      expect(new Set(budgets)).toEqual(new Set([LOSS_BUDGET]));
    }
  });
});
