/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The alert pack against the evidence table (src/core/evidence.ts): a page (severity critical) reads exposure only
 * inside a total (a selector that also reads proven continuity) and reads at least one loss-only selector; every
 * exposure series is on the dashboard.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { type EvidenceSubject, evidenceOf } from '../../src/core/evidence';
import { EVIDENCE_FAMILIES, METRICS, WHOLE_FAMILY, evidenceSeries } from '../../src/shared/names';
import { loadRules } from '../dashboards/rule-files';
import { analyzePromQL } from '../support/promql';

const rules = loadRules();
const recorded = new Map(rules.filter(r => r.record).map(r => [r.record!, r.expr]));
const bySeries = new Map<string, { subject: EvidenceSubject; label: string | undefined }>(
  (Object.entries(EVIDENCE_FAMILIES) as [EvidenceSubject, (typeof EVIDENCE_FAMILIES)[EvidenceSubject]][]).map(
    ([subject, f]) => [METRICS[f.metric].prometheusName, { subject, label: f.label }],
  ),
);

/** Every selector of an expression, through the recording rules it reads. */
function selectorsOf(expr: string, seen = new Set<string>()): ReturnType<typeof analyzePromQL>['selectors'] {
  const out = [];
  for (const s of analyzePromQL(expr).selectors) {
    if (s.name && recorded.has(s.name) && !seen.has(s.name)) {
      seen.add(s.name);
      out.push(...selectorsOf(recorded.get(s.name)!, seen));
    } else out.push(s);
  }
  return out;
}

/** The evidence of each value a selector reads of a table family. */
function evidenceRead(selector: ReturnType<typeof analyzePromQL>['selectors'][number]) {
  const family = selector.name ? bySeries.get(selector.name) : undefined;
  if (!family) return undefined;
  if (family.label === undefined) return [evidenceOf(family.subject, WHOLE_FAMILY)];
  const labels = METRICS[EVIDENCE_FAMILIES[family.subject].metric].labels as Record<string, readonly string[]>;
  let values = [...(labels[family.label] ?? [])];
  for (const m of selector.matchers.filter(m => m.label === family.label)) {
    const re = new RegExp(`^(?:${m.value})$`);
    values = values.filter(v =>
      m.op === '=' ? v === m.value : m.op === '=~' ? re.test(v) : m.op === '!=' ? v !== m.value : !re.test(v),
    );
  }
  return values.map(v => evidenceOf(family.subject, v));
}

const pages = rules.filter(r => r.alert && r.labels?.severity === 'critical');

test('the pack has pages to check', () => {
  expect(pages.length).toBeGreaterThanOrEqual(4);
});

test.each(pages.map(p => [p.alert!, p.expr] as const))(
  '%s reads proven loss, and exposure only inside a total beside continuity',
  (_alert, expr) => {
    const read = selectorsOf(expr)
      .map(evidenceRead)
      .filter(e => e !== undefined);
    expect(read.some(e => e.length > 0 && e.every(v => v === 'proven_loss'))).toBe(true);
    for (const e of read) if (e.includes('exposure')) expect(e).toContain('proven_continuity');
  },
);

test('every exposure series of the table is on the dashboard', () => {
  const board = readFileSync(join(__dirname, '../../dashboards/forkwatch-overview.json'), 'utf8');
  const exprs: string[] = [...board.matchAll(/"expr":\s*"((?:[^"\\]|\\.)*)"/g)].map(m => JSON.parse(`"${m[1]}"`));
  const series = evidenceSeries('exposure');
  expect(series.length).toBeGreaterThan(10);
  for (const s of series) {
    const shown = exprs.some(e =>
      analyzePromQL(e.replaceAll('$__rate_interval', '5m')).selectors.some(sel => {
        if (sel.name !== s.prometheusName) return false;
        if (s.label === undefined || s.value === WHOLE_FAMILY) return true;
        const m = sel.matchers.find(x => x.label === s.label);
        return (
          m === undefined ||
          (m.op === '=~' && new RegExp(`^(?:${m.value})$`).test(s.value)) ||
          (m.op === '=' && m.value === s.value)
        );
      }),
    );
    expect(shown, `${s.prometheusName}{${s.label ?? ''}="${s.value}"}`).toBe(true);
  }
});
