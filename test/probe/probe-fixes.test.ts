/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Every condition that can fail names one fix (issue 51): the table in src/cli/probe/fixes.ts covers every condition
 * of both stream kinds, each fix is one line, no failure is made outside `failed()` (so none goes without its fix),
 * the published schema lists the same causes, and the text report prints the evidence and exactly one `fix:` line
 * under each failed condition.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type ConditionKey, FIXES, failed } from '../../src/cli/probe/fixes';
import { renderText } from '../../src/cli/probe/render-text';
import {
  CONDITIONS,
  type ProbeReport,
  STANDALONE_CONDITIONS,
  allConditions,
  allStandalone,
  summarizeResumes,
} from '../../src/cli/probe/report';
import { standaloneReport } from '../../src/cli/probe/standalone';
import { ROOT } from './fixtures/built-cli';

const PROBE_SRC = join(ROOT, 'src/cli/probe');
const ALL_KEYS: ConditionKey[] = [
  ...CONDITIONS.map(c => `request.${c}` as const),
  ...STANDALONE_CONDITIONS.map(c => `standalone.${c}` as const),
];

describe('the fix table', () => {
  test('every condition of both stream kinds has at least one cause, and every cause a real condition', () => {
    const covered = new Set(Object.values(FIXES).flatMap(f => [...f.fails]));
    expect(ALL_KEYS.filter(key => !covered.has(key))).toEqual([]);
    for (const [cause, fix] of Object.entries(FIXES)) {
      expect(fix.fails.length, cause).toBeGreaterThan(0);
      for (const key of fix.fails) expect(ALL_KEYS, cause).toContain(key);
    }
  });

  test('each fix is one line that says what to change', () => {
    for (const [cause, { fix }] of Object.entries(FIXES)) {
      expect(fix, cause).not.toMatch(/[\r\n]/);
      expect(fix.length, cause).toBeGreaterThan(40);
      expect(fix.length, cause).toBeLessThanOrEqual(300);
      // An imperative, not a description of the problem.
      expect(fix, cause).toMatch(
        /^(configure|store|send|make|answer|route|replace|key|replay|accept|keep|implement|refuse)\b/,
      );
    }
  });

  test('no failure is made outside failed(): a literal `status: fail` in src/cli/probe would have no fix', () => {
    const offenders = readdirSync(PROBE_SRC)
      .filter(f => f.endsWith('.ts') && f !== 'fixes.ts')
      .filter(f => /status:\s*'fail'/.test(readFileSync(join(PROBE_SRC, f), 'utf8')));
    expect(offenders).toEqual([]);
  });

  test('failed() carries the cause, its fix and the evidence', () => {
    const result = failed('request.bogus_cursor_refused', 'unknown_cursor_served', 'answered 200', { status: 200 });
    expect(result).toEqual({
      status: 'fail',
      detail: 'answered 200',
      evidence: { status: 200 },
      cause: 'unknown_cursor_served',
      fix: FIXES.unknown_cursor_served.fix,
    });
  });

  test('docs/probe.md lists every cause with its fix, word for word', () => {
    const docs = readFileSync(join(ROOT, 'docs/probe.md'), 'utf8');
    for (const [cause, { fix }] of Object.entries(FIXES)) {
      expect(docs, cause).toContain(`| \`${cause}\` |`);
      expect(docs, cause).toContain(fix);
    }
  });

  test('the published schema lists exactly these causes', () => {
    const schema = JSON.parse(readFileSync(join(ROOT, 'schema/probe-report.schema.json'), 'utf8'));
    expect(schema.definitions.condition.properties.cause.enum).toEqual(Object.keys(FIXES));
    expect(schema.definitions.condition.properties.fix.type).toBe('string');
  });
});

describe('the text report', () => {
  test('under each failed condition: its evidence and exactly one fix line; nothing under the others', () => {
    const conditions = allConditions('pass', 'fine');
    conditions.bogus_cursor_refused = failed('request.bogus_cursor_refused', 'unknown_cursor_served', 'answered 200', {
      status: 200,
    });
    const standalone = allStandalone('pass', 'fine');
    standalone.continues = failed('standalone.continues', 'no_affinity_stream', 'never arrived', { round: 1 });
    const text = renderText(report(conditions, standaloneReport(standalone)));
    const lines = text.split('\n');
    const fails = lines.flatMap((l, i) => (/^\s+FAIL\s/.test(l) ? [i] : []));
    expect(fails).toHaveLength(2);
    for (const i of fails) {
      expect(lines[i + 1]).toMatch(/^\s+evidence: \{/);
      expect(lines[i + 2]).toMatch(/^\s+fix: \S/);
    }
    expect(lines.filter(l => /^\s+fix: /.test(l))).toEqual([
      `           fix: ${FIXES.unknown_cursor_served.fix}`,
      `           fix: ${FIXES.no_affinity_stream.fix}`,
    ]);
    expect(lines[fails[0]! + 1]).toContain('"status":200');
  });
});

function report(conditions: ProbeReport['conditions'], standalone: ProbeReport['streams']['standalone']): ProbeReport {
  return {
    schema: 'forkwatch.probe/v1',
    target: 'http://127.0.0.1:1/mcp',
    startedAt: new Date(0).toISOString(),
    durationMs: 1,
    verdict: 'not_resumable',
    exitCode: 1,
    summary: 'not resumable',
    protocol: { requested: '2025-11-25', negotiated: '2025-11-25' },
    session: { id: 's' },
    cursor: { real: 'a:1', expectedEventId: 'a:2', bogus: 'b:1' },
    conditions,
    resumes: summarizeResumes([]),
    streams: { request: { verdict: 'not_resumable' }, standalone },
    steps: [],
    notes: [],
  };
}
