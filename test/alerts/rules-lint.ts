/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Lint for forkwatch's Prometheus rules and runbooks. Pure: takes the parsed rule files, the metric families of a
 * real scrape and the runbook texts, returns problems. test/alerts/rules-lint.test.ts feeds it the real inputs and
 * deliberately broken ones.
 *
 * Checks (ids in brackets):
 *  - every expression (rules, `query "..."` in annotations, ```promql blocks in runbooks) parses [promql-syntax]
 *  - every metric name is exported by forkwatch (the scrape), recorded by a rule, or Prometheus' own `up`
 *    [unknown-metric]; a `__name__` regex must match one [unknown-metric]
 *  - matchers use labels the series has [unknown-label] and label values it takes [unknown-label-value]
 *  - rate()/irate()/increase() only over counters (a counter family, or a histogram's _bucket/_sum/_count)
 *    [rate-non-counter]
 *  - record names are level:metric:operations, unique [record-name]
 *  - alerts: name `Forkwatch…` in CamelCase [alert-name], severity critical|warning [alert-severity], static
 *    sentence summary [alert-summary], templated description [alert-description], runbook_url and dashboard_url
 *    [alert-runbook-url] [alert-dashboard-url], absent() with a `for` of at least 2m [alert-absent-for]
 *  - one runbook per alert with the Meaning/Impact/Diagnosis/Mitigation sections, PromQL in Diagnosis, and the
 *    alert's `for` durations stated [runbook]; forkwatch span/attribute names in runbooks exist [runbook-trace-name];
 *    no runbook without an alert [runbook-orphan]
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { dashboardUrl, runbookUrlPattern } from '../../pack/config/links';
import { analyzePromQL, type SelectorRef } from '../support/promql';
import { type MetricFamily, type MetricType, seriesNamesByType } from '../support/scrape';

export const ALERT_PREFIX = 'Forkwatch';
export const RUNBOOK_URL_PREFIX = runbookUrlPattern(DEFAULT_CONFIG).replace(/%s\.md$/, '');
export const DASHBOARD_URL = dashboardUrl(DEFAULT_CONFIG);
export const RUNBOOK_SECTIONS = ['Meaning', 'Impact', 'Diagnosis', 'Mitigation'] as const;

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RuleFile {
  file: string;
  groups: { name: string; interval?: string; rules: Rule[] }[];
}

export interface Problem {
  check: string;
  where: string;
  message: string;
}

export interface LintInput {
  files: RuleFile[];
  /** Metric families from a real scrape of an instrumented process. */
  families: Map<string, MetricFamily>;
  /** Runbook file name (e.g. ForkwatchForksDetected.md) to its markdown. */
  runbooks: Map<string, string>;
  /** Known forkwatch span, span-event and attribute names (src/shared/names.ts), for trace queries in runbooks. */
  traceNames: Set<string>;
}

/** Labels Prometheus attaches to every scraped series (and the ones relabelling adds in the default config). */
const TARGET_LABELS = ['job', 'instance', ...DEFAULT_CONFIG.aggregationLabels];
/** Series Prometheus itself writes for every target or rule. */
const PROMETHEUS_SERIES = new Map<string, { type: MetricType; labels: string[] }>([
  ['up', { type: 'gauge', labels: TARGET_LABELS }],
  ['ALERTS', { type: 'gauge', labels: ['alertname', 'alertstate', 'severity', ...TARGET_LABELS] }],
]);
/** Labels whose values depend on the deployment: their values are not checked. */
const OPEN_LABELS = new Set([
  ...TARGET_LABELS,
  'otel_scope_name',
  'otel_scope_version',
  'alertname',
  'alertstate',
  'severity',
]);
const COUNTER_FUNCTIONS = new Set(['rate', 'irate', 'increase']);

/** Reads every *.rules.yml / *.rules.yaml of a directory. */
export function loadRuleFiles(dir: string): RuleFile[] {
  return readdirSync(dir)
    .filter(f => /\.rules\.ya?ml$/.test(f))
    .sort()
    .map(f => ({
      file: f,
      groups: (parse(readFileSync(join(dir, f), 'utf8')) as { groups: RuleFile['groups'] }).groups,
    }));
}

/** Reads every *.md of a directory. */
export function loadRunbooks(dir: string): Map<string, string> {
  return new Map(
    readdirSync(dir)
      .filter(f => f.endsWith('.md'))
      .map(f => [f, readFileSync(join(dir, f), 'utf8')] as const),
  );
}

interface SeriesInfo {
  type: MetricType | 'recorded';
  /** Label name -> known values (undefined: any value). undefined map: labels not known. */
  labels?: Map<string, Set<string> | undefined>;
}

/** Durations like 90s, 15m, 1h30m in seconds. */
export function durationSeconds(d: string): number {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  let total = 0;
  const re = /(\d+)(ms|s|m|h|d|w|y)/g;
  let matched = '';
  for (let m = re.exec(d); m; m = re.exec(d)) {
    total += Number(m[1]) * (units[m[2] as string] as number);
    matched += m[0];
  }
  if (matched !== d) throw new Error(`bad duration ${d}`);
  return total;
}

export function lintRules(input: LintInput): Problem[] {
  const problems: Problem[] = [];
  const report = (check: string, where: string, message: string) => problems.push({ check, where, message });

  // Known series: scrape, then recording rules.
  const series = new Map<string, SeriesInfo>();
  const byType = seriesNamesByType(input.families);
  const familyOfSeries = new Map<string, MetricFamily>();
  for (const [name, f] of input.families) {
    for (const s of f.seriesNames) familyOfSeries.set(s, f);
    familyOfSeries.set(name, f);
  }
  for (const [name, type] of byType) {
    const f = familyOfSeries.get(name);
    const labels = new Map<string, Set<string> | undefined>();
    for (const [l, values] of f?.labels ?? []) labels.set(l, OPEN_LABELS.has(l) ? undefined : values);
    for (const l of TARGET_LABELS) labels.set(l, undefined);
    series.set(name, { type, labels });
  }
  for (const [name, p] of PROMETHEUS_SERIES) {
    series.set(name, { type: p.type, labels: new Map(p.labels.map(l => [l, undefined])) });
  }
  const records = new Map<string, string>();
  for (const file of input.files) {
    for (const group of file.groups) {
      for (const rule of group.rules) {
        if (rule.record === undefined) continue;
        const where = `${file.file}: record ${rule.record}`;
        if (!/^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/.test(rule.record)) {
          report('record-name', where, 'record names are level:metric:operations (lower case, two colons)');
        }
        if (records.has(rule.record)) report('record-name', where, `also recorded in ${records.get(rule.record)}`);
        records.set(rule.record, file.file);
        // Output labels: the outermost `by (...)`; their values come from the selected series.
        const a = analyzePromQL(rule.expr);
        let labels: Map<string, Set<string> | undefined> | undefined;
        if (a.outerGroupingLabels) {
          labels = new Map();
          for (const l of a.outerGroupingLabels) {
            let values: Set<string> | undefined;
            if (!OPEN_LABELS.has(l)) {
              values = new Set();
              for (const sel of a.selectors) {
                for (const v of series.get(sel.name ?? '')?.labels?.get(l) ?? []) values.add(v);
              }
              if (values.size === 0) values = undefined;
            }
            labels.set(l, values);
          }
        }
        series.set(rule.record, { type: 'recorded', labels });
      }
    }
  }

  const namesMatching = (sel: SelectorRef): string[] => {
    if (sel.name !== undefined) return [sel.name];
    const re = sel.matchers.find(m => m.label === '__name__' && m.op === '=~');
    if (!re) return [];
    const rx = new RegExp(`^(?:${re.value})$`);
    return [...series.keys()].filter(n => rx.test(n));
  };

  const lintExpr = (expr: string, where: string) => {
    const a = analyzePromQL(expr);
    for (const e of a.errors) report('promql-syntax', where, `syntax error at offset ${e.from} near "${e.near}"`);
    for (const sel of a.selectors) {
      const names = namesMatching(sel);
      if (names.length === 0) {
        report('unknown-metric', where, `${sel.text} matches no series forkwatch exports or a rule records`);
        continue;
      }
      for (const name of names) {
        const info = series.get(name);
        if (!info) {
          report('unknown-metric', where, `${name} is neither exported by forkwatch (scrape) nor recorded by a rule`);
          continue;
        }
        if (!info.labels) continue;
        for (const m of sel.matchers) {
          if (m.label === '__name__') continue;
          if (!info.labels.has(m.label)) {
            report(
              'unknown-label',
              where,
              `${name} has no label ${m.label} (it has ${[...info.labels.keys()].join(', ')})`,
            );
            continue;
          }
          const known = info.labels.get(m.label);
          if (!known) continue;
          const bad = badValues(m.op, m.value, known);
          if (bad.length > 0) {
            report(
              'unknown-label-value',
              where,
              `${name}{${m.label}${m.op}"${m.value}"}: ${bad.join(', ')} not among ${[...known].join(', ')}`,
            );
          }
        }
      }
    }
    for (const call of a.calls) {
      if (!COUNTER_FUNCTIONS.has(call.name)) continue;
      for (const sel of call.firstArgSelectors) {
        for (const name of namesMatching(sel)) {
          const info = series.get(name);
          if (!info) continue; // reported as unknown-metric
          if (!isCounterSeries(name, info.type)) {
            report('rate-non-counter', where, `${call.name}() over ${name}, a ${info.type}, not a counter`);
          }
        }
      }
    }
  };

  // Expressions and alert conventions.
  const alerts = new Map<string, Rule[]>();
  for (const file of input.files) {
    for (const group of file.groups) {
      for (const rule of group.rules) {
        const where = `${file.file}: ${rule.alert ?? rule.record}`;
        lintExpr(rule.expr, where);
        for (const [key, text] of Object.entries(rule.annotations ?? {})) {
          for (const q of text.matchAll(/query\s+"((?:[^"\\]|\\.)*)"/g))
            lintExpr(JSON.parse(`"${q[1]}"`), `${where} annotation ${key}`);
        }
        if (rule.alert === undefined) continue;
        alerts.set(rule.alert, [...(alerts.get(rule.alert) ?? []), rule]);
        lintAlert(rule, where, report);
      }
    }
  }

  // Runbooks.
  const runbookFor = new Set<string>();
  for (const [alert, rules] of alerts) {
    const file = `${alert}.md`;
    runbookFor.add(file);
    const text = input.runbooks.get(file);
    if (text === undefined) {
      report('runbook', alert, `no runbook alerts/runbooks/${file}`);
      continue;
    }
    lintRunbook(alert, text, rules, report, lintExpr, input.traceNames);
  }
  for (const file of input.runbooks.keys()) {
    if (!runbookFor.has(file)) report('runbook-orphan', file, 'runbook for an alert that does not exist');
  }
  return problems;
}

function isCounterSeries(name: string, type: SeriesInfo['type']): boolean {
  if (type === 'counter') return true;
  if (type === 'histogram' || type === 'summary') return /_(bucket|sum|count)$/.test(name);
  return false;
}

/** Matcher values that are not label values of the series (regexes: each `|` alternative, or no match at all). */
function badValues(op: string, value: string, known: Set<string>): string[] {
  if (op === '=' || op === '!=') return known.has(value) ? [] : [value];
  const alternatives = value.split('|');
  if (alternatives.every(v => /^[A-Za-z0-9_+.-]*$/.test(v) && !v.includes('.'))) {
    return alternatives.filter(v => !known.has(v));
  }
  const rx = new RegExp(`^(?:${value})$`);
  return [...known].some(v => rx.test(v)) ? [] : [value];
}

function lintAlert(rule: Rule, where: string, report: (check: string, where: string, message: string) => void): void {
  const name = rule.alert as string;
  const a = rule.annotations ?? {};
  const severity = rule.labels?.severity;
  if (!name.startsWith(ALERT_PREFIX)) report('alert-name', where, `alert names start with ${ALERT_PREFIX}`);
  if (!/^([A-Z]+[a-z0-9]+)+$/.test(name)) report('alert-name', where, 'alert names are CamelCase');
  if (name.length > 40) report('alert-name', where, 'alert names have at most 40 characters');
  if (severity !== 'critical' && severity !== 'warning') {
    report('alert-severity', where, `severity must be critical (pages) or warning (ticket), not ${severity}`);
  }
  if (!a.summary) report('alert-summary', where, 'summary annotation missing');
  else {
    if (a.summary.includes('{{')) report('alert-summary', where, 'summary must be static (no templating)');
    if (!/^[A-Z].+\.$/.test(a.summary))
      report('alert-summary', where, 'summary is a sentence: capital letter, final period');
  }
  if (!a.description) report('alert-description', where, 'description annotation missing');
  else if (!/\{\{.+\}\}/.test(a.description)) report('alert-description', where, 'description must template values in');
  if (a.runbook_url !== `${RUNBOOK_URL_PREFIX}${name}.md`) {
    report('alert-runbook-url', where, `runbook_url must be ${RUNBOOK_URL_PREFIX}${name}.md, is ${a.runbook_url}`);
  }
  if (a.dashboard_url !== DASHBOARD_URL)
    report(
      'alert-dashboard-url',
      where,
      `dashboard_url must be ${DASHBOARD_URL ?? 'absent (the config names no Grafana host)'}`,
    );
  if (/\babsent(_over_time)?\s*\(/.test(rule.expr) && (rule.for === undefined || durationSeconds(rule.for) < 120)) {
    report(
      'alert-absent-for',
      where,
      'absent() needs a `for` of at least 2m (2x the scrape interval), or a Prometheus restart fires it',
    );
  }
}

/** The PromQL expressions of a runbook: ```promql blocks, one expression per blank-line separated paragraph. */
export function runbookPromQL(text: string): string[] {
  return [...text.matchAll(/```promql\n([\s\S]*?)```/g)].flatMap(block =>
    (block[1] as string)
      .split(/\n\s*\n/)
      .map(s => s.replace(/^#.*$/gm, '').trim())
      .filter(Boolean),
  );
}

function lintRunbook(
  alert: string,
  text: string,
  rules: Rule[],
  report: (check: string, where: string, message: string) => void,
  lintExpr: (expr: string, where: string) => void,
  traceNames: Set<string>,
): void {
  const where = `runbooks/${alert}.md`;
  if (!text.startsWith(`# ${alert}\n`)) report('runbook', where, `must start with "# ${alert}"`);
  const headings = [...text.matchAll(/^## (.+)$/gm)].map(m => (m[1] as string).trim());
  const positions = RUNBOOK_SECTIONS.map(s => headings.indexOf(s));
  if (positions.some(p => p < 0)) {
    report('runbook', where, `needs sections ${RUNBOOK_SECTIONS.join(', ')} (has ${headings.join(', ')})`);
  } else if (positions.some((p, i) => i > 0 && p < (positions[i - 1] as number))) {
    report('runbook', where, `sections in the order ${RUNBOOK_SECTIONS.join(', ')}`);
  }
  const diagnosis = /^## Diagnosis$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(text)?.[1] ?? '';
  if (!/```promql\n/.test(diagnosis)) report('runbook', where, 'Diagnosis needs the PromQL to run (a ```promql block)');
  for (const expr of runbookPromQL(text)) lintExpr(expr, `${where} promql`);
  for (const f of new Set(rules.map(r => r.for).filter((f): f is string => f !== undefined))) {
    if (!text.includes(`for: ${f}`)) report('runbook', where, `must state and justify the alert's \`for: ${f}\``);
  }
  for (const m of text.matchAll(/\b(forkwatch\.[a-z_]+(?:\.[a-z_]+)+)\b/g)) {
    if (!traceNames.has(m[1] as string))
      report('runbook-trace-name', where, `${m[1]} is not a forkwatch span, event or attribute name`);
  }
}
