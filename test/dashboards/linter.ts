/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * grafana/dashboard-linter's rules (lint/rules.go, NewRuleSet), re-implemented because its Go binary cannot be
 * installed here, plus forkwatch's own rules. Exclusions are read from dashboards/.lint, in dashboard-linter's
 * format, so the real linter can be pointed at the same file.
 *
 * Deliberate differences: panel rules apply to every non-row panel (upstream skips heatmaps and a few others), and
 * target-counter-agg-rule checks the metric name (upstream checks the selector text, which ends in `}` whenever
 * there are matchers, so it only catches bare counters). The Loki rules (target-logql-*) do not apply.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { DASHBOARDS_DIR, type Dashboard, type Panel, panelsOf } from './dashboard-model';
import { SAMPLE_DURATIONS, type Selector, analyse, analyseLabelValues } from './promql';
import { VALID_UNITS } from './units';

export interface Problem {
  rule: string;
  dashboard: string;
  panel?: string;
  targetIdx?: number;
  message: string;
}

type Report = (message: string, where?: { panel?: Panel; targetIdx?: number }) => void;
type Rule = (d: Dashboard, report: Report) => void;

/**
 * The Prometheus data source variable the panels, targets and label variables must use: upstream's
 * panel-datasource-rule accepts any templated data source; forkwatch's panels are all PromQL, so only a Prometheus one.
 */
const prometheusDatasourceRefs = (d: Dashboard) =>
  (d.templating?.list ?? [])
    .filter(v => v.type === 'datasource' && v.query === 'prometheus')
    .flatMap(v => [`$${v.name}`, `\${${v.name}}`]);
const usesTemplatedDatasource = (d: Dashboard, ref?: { uid?: string }) =>
  prometheusDatasourceRefs(d).includes(ref?.uid ?? '');

/** Labels every query must filter on, per kind of series (see targetVariablesRule). */
const SCOPE_LABELS = ['cluster', 'namespace', 'job', 'instance'];
const AGGREGATION_LABELS = ['cluster', 'namespace'];

function templateRule(name: string): Rule {
  return (d, report) => {
    const t = d.templating?.list?.find(v => v.name === name);
    if (!t) return report(`is missing the ${name} template`);
    if (!usesTemplatedDatasource(d, t.datasource))
      report(`${name} template should use the Prometheus data source variable`);
    if (t.type !== 'query') report(`${name} template should be a Prometheus query, is '${t.type}'`);
    if (t.label !== name[0]?.toUpperCase() + name.slice(1)) report(`${name} template label is '${t.label}'`);
    if (!t.multi) report(`${name} template should be a multi select`);
    if (t.allValue !== '.+') report(`${name} template allValue should be '.+', is '${t.allValue}'`);
  };
}

function eachTarget(d: Dashboard, fn: (panel: Panel, expr: string, targetIdx: number) => void) {
  for (const panel of panelsOf(d)) {
    (panel.targets ?? []).forEach((t, i) => {
      fn(panel, t.expr ?? '', i);
    });
  }
}

function requiredMatcherRule(label: string): Rule {
  return (d, report) =>
    eachTarget(d, (panel, expr, targetIdx) => {
      for (const s of analyse(expr).selectors) {
        if (!s.matchers.some(m => m.name === label && m.op === '=~' && m.value === `$${label}`)) {
          report(`${s.metric ?? 'selector'} lacks ${label}=~"$${label}"`, { panel, targetIdx });
        }
      }
    });
}

/**
 * The scope labels a series carries: all for raw series, the aggregation labels and the level of a
 * `level:metric:ops` recording rule, none
 * known for ALERTS (each alert keeps its own; target-job-rule still asks for job there).
 */
function scopeLabelsOf(s: Selector): string[] {
  if (s.metric === 'ALERTS') return [];
  const level = s.metric?.includes(':') ? s.metric.split(':')[0] : undefined;
  // Recording rules keep the pack's aggregation labels (cluster, namespace) and the labels their level names.
  return level === undefined
    ? SCOPE_LABELS
    : SCOPE_LABELS.filter(l => AGGREGATION_LABELS.includes(l) || level.split('_').includes(l));
}

export const RULES: Record<string, Rule> = {
  'template-datasource-rule': (d, report) => {
    // Upstream: alone, the variable may be `datasource` / "Data source"; beside others, each is named after its type
    // (`prometheus_datasource`, "Prometheus data source"). forkwatch's own: one of them is a Prometheus one.
    const ds = (d.templating?.list ?? []).filter(v => v.type === 'datasource');
    if (ds.length === 0) report('does not have a templated data source');
    for (const v of ds) {
      const type = (v.query ?? '').toLowerCase();
      const names = [`${type}_datasource`, ...(ds.length === 1 ? ['datasource'] : [])];
      const labels = [
        `${type[0]?.toUpperCase()}${type.slice(1)} data source`,
        ...(ds.length === 1 ? ['Data source'] : []),
      ];
      if (!names.includes(v.name)) report(`data source variable named '${v.name}', should be ${names.join(' or ')}`);
      if (!labels.includes(v.label ?? ''))
        report(`data source variable labeled '${v.label}', should be ${labels.join(' or ')}`);
    }
    if (!ds.some(v => v.query === 'prometheus')) report('has no Prometheus data source variable');
  },
  'template-job-rule': templateRule('job'),
  'template-instance-rule': templateRule('instance'),
  'template-label-promql-rule': (d, report) => {
    for (const v of (d.templating?.list ?? []).filter(x => x.type === 'query')) {
      const parsed = analyseLabelValues(v.query ?? '');
      if ('error' in parsed) report(`template '${v.name}': ${parsed.error}`);
      else for (const e of parsed.selector?.syntaxErrors ?? []) report(`template '${v.name}': ${e}`);
    }
  },
  'template-on-time-change-reload-rule': (d, report) => {
    for (const v of (d.templating?.list ?? []).filter(x => x.type === 'query')) {
      if (v.refresh !== 2) report(`variable '${v.name}' refresh is ${v.refresh}, should be 2 (on time range change)`);
    }
  },
  'panel-datasource-rule': (d, report) => {
    for (const panel of panelsOf(d)) {
      if (!usesTemplatedDatasource(d, panel.datasource)) report(`uses '${panel.datasource?.uid}'`, { panel });
      (panel.targets ?? []).forEach((t, targetIdx) => {
        if (!usesTemplatedDatasource(d, t.datasource))
          report(`target uses '${t.datasource?.uid}'`, { panel, targetIdx });
      });
    }
  },
  'panel-title-description-rule': (d, report) => {
    for (const panel of panelsOf(d)) {
      if (!panel.title || !panel.description) report('has no title or description', { panel });
    }
  },
  'panel-units-rule': (d, report) => {
    for (const panel of panelsOf(d)) {
      const units = [panel.fieldConfig?.defaults?.unit];
      if (panel.type === 'heatmap') units.push(panel.options?.yAxis?.unit);
      for (const unit of units) if (!VALID_UNITS.has(unit ?? '')) report(`has no or invalid unit '${unit}'`, { panel });
    }
  },
  'panel-no-targets-rule': (d, report) => {
    for (const panel of panelsOf(d)) if (!panel.targets?.length) report('has no targets', { panel });
  },
  'target-promql-rule': (d, report) =>
    eachTarget(d, (panel, expr, targetIdx) => {
      if (expr.trim() === '') report('empty query', { panel, targetIdx });
      for (const e of analyse(expr).syntaxErrors) report(e, { panel, targetIdx });
    }),
  'target-rate-interval-rule': (d, report) =>
    eachTarget(d, (panel, expr, targetIdx) => {
      for (const r of analyse(expr).ranges) {
        if (r.range === SAMPLE_DURATIONS.__rate_interval) continue;
        if (r.fn === undefined) report(`range [${r.range}] outside a function`, { panel, targetIdx });
        else if (['rate', 'irate'].includes(r.fn)) report(`${r.fn}() needs $__rate_interval`, { panel, targetIdx });
      }
    }),
  'target-job-rule': requiredMatcherRule('job'),
  'target-instance-rule': requiredMatcherRule('instance'),
  'target-counter-agg-rule': (d, report) =>
    eachTarget(d, (panel, expr, targetIdx) => {
      for (const s of analyse(expr).selectors) {
        if (s.metric?.endsWith('_total') && !['rate', 'irate', 'increase'].includes(s.rangeFunction ?? '')) {
          report(`counter ${s.metric} is not aggregated with rate, irate or increase`, { panel, targetIdx });
        }
      }
    }),
  'uneditable-dashboard': (d, report) => {
    if (d.editable !== false) report("is editable, it should be set to 'editable: false'");
  },

  // forkwatch's own rules.
  'dashboard-identity-rule': (d, report) => {
    if (!d.title) report('dashboard has no title');
    if (!/^[A-Za-z0-9_-]{1,40}$/.test(d.uid ?? '')) report(`uid '${d.uid}' missing or not a stable id`);
    if (d.id !== undefined && d.id !== null) report('dashboard files carry no numeric id');
    if ((d.schemaVersion ?? 0) < 41) report(`schemaVersion ${d.schemaVersion} is not current`);
  },
  'panel-ids-rule': (d, report) => {
    const seen = new Set<number>();
    for (const panel of d.panels ?? []) {
      for (const p of [panel, ...(panel.panels ?? [])]) {
        if (typeof p.id !== 'number' || seen.has(p.id)) report(`panel id ${p.id} missing or repeated`, { panel: p });
        seen.add(p.id ?? -1);
      }
    }
    for (const panel of panelsOf(d)) {
      const refIds = (panel.targets ?? []).map(t => t.refId);
      const unique = new Set(refIds).size === refIds.length;
      if (refIds.some(r => !r) || !unique) report('refIds missing or repeated', { panel });
    }
  },
  'panel-runbook-link-rule': (d, report) => {
    for (const panel of panelsOf(d)) {
      if (!(panel.links ?? []).some(l => l.url?.includes('/alerts/runbooks'))) report('links to no runbook', { panel });
    }
  },
  'target-variables-rule': (d, report) =>
    eachTarget(d, (panel, expr, targetIdx) => {
      for (const s of analyse(expr).selectors) {
        for (const label of scopeLabelsOf(s)) {
          if (!s.matchers.some(m => m.name === label && m.op === '=~' && m.value === `$${label}`)) {
            report(`${s.metric} lacks ${label}=~"$${label}"`, { panel, targetIdx });
          }
        }
      }
    }),
};

interface Exclusion {
  dashboard?: string;
  panel?: string;
  targetIdx?: string;
}

export function loadExclusions(): Record<string, Exclusion[]> {
  const file = parseYaml(readFileSync(join(DASHBOARDS_DIR, '.lint'), 'utf8')) as {
    exclusions?: Record<string, { entries?: Exclusion[] }>;
  };
  return Object.fromEntries(Object.entries(file.exclusions ?? {}).map(([rule, e]) => [rule, e.entries ?? []]));
}

const excluded = (p: Problem, entries: Exclusion[]) =>
  entries.some(
    e =>
      (e.dashboard === undefined || e.dashboard === p.dashboard) &&
      (e.panel === undefined || e.panel === p.panel) &&
      (e.targetIdx === undefined || Number(e.targetIdx) === p.targetIdx),
  );

export function lintDashboard(d: Dashboard, exclusions: Record<string, Exclusion[]> = {}): Problem[] {
  const problems: Problem[] = [];
  for (const [rule, check] of Object.entries(RULES)) {
    check(d, (message, where = {}) => {
      const problem: Problem = { rule, dashboard: d.title ?? '', message };
      if (where.panel) problem.panel = where.panel.title ?? `#${where.panel.id}`;
      if (where.targetIdx !== undefined) problem.targetIdx = where.targetIdx;
      if (!excluded(problem, exclusions[rule] ?? [])) problems.push(problem);
    });
  }
  return problems;
}

export function formatProblem(p: Problem): string {
  const where = [p.dashboard, p.panel].filter(Boolean).join(' / ');
  return `[${p.rule}] ${where}${p.targetIdx !== undefined ? ` #${p.targetIdx}` : ''}: ${p.message}`;
}
