/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The evidence table (src/core/evidence.ts) against the contract: every counted value has exactly one row. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  EVIDENCE_CLASSES,
  EVIDENCE_RULES,
  type EvidenceSubject,
  WHOLE_FAMILY,
  evidenceOf,
  valuesWith,
} from '../../src/core/evidence';
import { RESUME_OUTCOMES } from '../../src/core/verdict';
import {
  EVIDENCE_FAMILIES,
  METRICS,
  SERVER_UNDELIVERED_LOSS_REASONS,
  SERVER_UNDELIVERED_REASONS,
} from '../../src/shared/names';
import { CLIENT_SLO_BAD, CLIENT_SLO_GOOD } from '../../pack/alerts/slo';

const root = join(__dirname, '../..');
const families = Object.entries(EVIDENCE_FAMILIES) as [EvidenceSubject, (typeof EVIDENCE_FAMILIES)[EvidenceSubject]][];

/** The values a subject's label takes in names.ts, or the whole family. */
function contractValues(subject: EvidenceSubject): readonly string[] {
  const family = EVIDENCE_FAMILIES[subject];
  if (family.label === undefined) return [WHOLE_FAMILY];
  const labels = METRICS[family.metric].labels as Readonly<Record<string, readonly string[]>>;
  return labels[family.label] ?? [];
}

describe('one evidence model, one table', () => {
  test.each(families.map(([subject]) => subject))(
    '%s: every value of its label in names.ts has exactly one row, and no row names another',
    subject => {
      const values = contractValues(subject);
      expect(values.length).toBeGreaterThan(0);
      const rows = EVIDENCE_RULES.filter(r => r.subject === subject).map(r => r.value);
      expect([...rows].sort()).toEqual([...values].sort());
    },
  );

  test('every row belongs to a subject names.ts maps to a metric family', () => {
    for (const row of EVIDENCE_RULES) expect(Object.keys(EVIDENCE_FAMILIES)).toContain(row.subject);
  });

  test('every counter family with an outcome, reason, kind or state label is a subject of the table', () => {
    const covered = new Set(families.map(([, f]) => f.metric));
    const missing = Object.entries(METRICS)
      .filter(([, spec]) => spec.kind === 'counter')
      .filter(([, spec]) => ['outcome', 'reason', 'kind', 'state'].some(l => l in spec.labels))
      .map(([key]) => key)
      .filter(key => !covered.has(key as keyof typeof METRICS));
    expect(missing).toEqual([]);
  });

  test('each row says what it needs and what motivates it, and names test files that exist and name its value', () => {
    for (const row of EVIDENCE_RULES) {
      expect(EVIDENCE_CLASSES).toContain(row.evidence);
      expect(row.needs.length, `${row.subject}/${row.value}`).toBeGreaterThan(10);
      expect(row.motivatedBy.length).toBeGreaterThan(3);
      expect(row.tests.length).toBeGreaterThan(0);
      for (const file of row.tests) {
        expect(existsSync(join(root, file)), `${row.subject}/${row.value}: ${file}`).toBe(true);
        if (row.value !== WHOLE_FAMILY) {
          expect(readFileSync(join(root, file), 'utf8'), `${file} names ${row.value}`).toContain(row.value);
        }
      }
    }
  });

  test('the client SLO and the server delivery SLO read their sides from the table', () => {
    expect(CLIENT_SLO_GOOD).toEqual(['resumed']);
    expect(CLIENT_SLO_BAD).toEqual(['forked']);
    expect([...CLIENT_SLO_GOOD, ...CLIENT_SLO_BAD, ...valuesWith('client_resume', 'exposure')].sort()).toEqual(
      [...RESUME_OUTCOMES].sort(),
    );
    expect(SERVER_UNDELIVERED_LOSS_REASONS).toEqual(['stream_moved', 'no_listener', 'dropped']);
    expect(SERVER_UNDELIVERED_REASONS.filter(r => evidenceOf('server_undelivered', r) === 'exposure')).toEqual([
      'abandoned',
      'in_flight',
    ]);
  });

  test('a cursor dropped after an inconclusive resume is exposure, never nothing; a value the table does not know is exposure', () => {
    expect(evidenceOf('client_resume', 'cursor_dropped_after_inconclusive')).toBe('exposure');
    expect(evidenceOf('client_resume', 'no_such_outcome')).toBe('exposure');
    expect(evidenceOf('client_fork', 'cursor_dropped')).toBe('proven_loss');
    expect(evidenceOf('server_revived', 'empty')).toBe('exposure');
  });
});
