/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { describe, expect, test } from 'vitest';
import { type Dashboard, type Panel, loadDashboard, panelsOf } from './dashboard-model';
import { RULES, formatProblem, lintDashboard, loadExclusions } from './linter';

const overview = loadDashboard('forkwatch-overview.json');
const exclusions = loadExclusions();

const clone = (): Dashboard => structuredClone(overview);
const panel = (d: Dashboard, title: string): Panel => {
  const found = panelsOf(d).find(p => p.title === title);
  if (!found) throw new Error(`no panel "${title}"`);
  return found;
};
const firstTarget = (d: Dashboard, title: string) => {
  const t = panel(d, title).targets?.[0];
  if (!t) throw new Error(`panel "${title}" has no target`);
  return t;
};
const variable = (d: Dashboard, name: string) => {
  const v = d.templating?.list?.find(x => x.name === name);
  if (!v) throw new Error(`no variable ${name}`);
  return v;
};

const FORK_RATE = 'Fork rate by reason and transport';

/** One breakage per rule, each of which that rule (and no exclusion) must report. */
const BREAKAGES: Record<string, (d: Dashboard) => void> = {
  'template-datasource-rule': d => {
    d.templating = { list: (d.templating?.list ?? []).filter(v => v.type !== 'datasource') };
  },
  'template-job-rule': d => {
    variable(d, 'job').allValue = '.*';
  },
  'template-instance-rule': d => {
    variable(d, 'instance').multi = false;
  },
  'template-label-promql-rule': d => {
    variable(d, 'job').query = 'label_values(forkwatch_client_resumes_total{job=~"$cluster", job)';
  },
  'template-on-time-change-reload-rule': d => {
    variable(d, 'instance').refresh = 1;
  },
  'panel-datasource-rule': d => {
    panel(d, FORK_RATE).datasource = { type: 'prometheus', uid: 'prometheus-prod' };
  },
  'panel-title-description-rule': d => {
    delete panel(d, 'Resume gap time (client)').description;
  },
  'panel-units-rule': d => {
    const p = panel(d, 'Skipped events on resume (client)');
    if (p.options?.yAxis) p.options.yAxis.unit = 'events';
  },
  'panel-no-targets-rule': d => {
    panel(d, 'Duplicate events (client)').targets = [];
  },
  'target-promql-rule': d => {
    firstTarget(d, FORK_RATE).expr = 'sum by (reason (rate(forkwatch_client_forks_total[$__rate_interval]))';
  },
  'target-rate-interval-rule': d => {
    const t = firstTarget(d, FORK_RATE);
    t.expr = t.expr?.replace('$__rate_interval', '5m');
  },
  'target-job-rule': d => {
    const t = firstTarget(d, FORK_RATE);
    t.expr = t.expr?.replace('job=~"$job", ', '');
  },
  'target-instance-rule': d => {
    const t = firstTarget(d, 'Duplicate events (client)');
    t.expr = t.expr?.replace('instance=~"$instance"', 'instance=~".+"');
  },
  'target-counter-agg-rule': d => {
    const t = firstTarget(d, FORK_RATE);
    t.expr = t.expr?.replace(/rate\((.*)\[\$__rate_interval\]\)/, '$1');
  },
  'uneditable-dashboard': d => {
    d.editable = true;
  },
  'dashboard-identity-rule': d => {
    d.uid = 'forkwatch overview';
  },
  'panel-ids-rule': d => {
    panel(d, FORK_RATE).id = panel(d, 'Forked resumes').id;
  },
  'panel-runbook-link-rule': d => {
    panel(d, 'Server replay size').links = [];
  },
  'target-variables-rule': d => {
    const t = firstTarget(d, 'Server events per instance');
    t.expr = t.expr?.replace('namespace=~"$namespace", ', '');
  },
};

describe('dashboard lint (dashboard-linter rules and forkwatch rules)', () => {
  test('the overview dashboard breaks no rule', () => {
    expect(lintDashboard(overview, exclusions).map(formatProblem)).toEqual([]);
  });

  test('every exclusion in dashboards/.lint is still needed', () => {
    const unexcused = lintDashboard(overview).map(p => `${p.rule}|${p.panel}`);
    for (const [rule, entries] of Object.entries(exclusions)) {
      for (const e of entries) {
        expect(unexcused, `${rule} for "${e.panel}" excludes nothing`).toContain(`${rule}|${e.panel}`);
      }
    }
  });

  test('every rule has a breakage that proves it can fail', () => {
    expect(Object.keys(BREAKAGES).sort()).toEqual(Object.keys(RULES).sort());
  });

  test.each(Object.entries(BREAKAGES))('%s reports its breakage', (rule, breakIt) => {
    const broken = clone();
    breakIt(broken);
    const problems = lintDashboard(broken, exclusions);
    expect(problems.map(p => p.rule)).toContain(rule);
  });
});
