/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The ground-truth scenario matrix (issue 45 item 6) in CI: a fixed, seeded sample of SAMPLE_SIZE cells
 * (lab/matrix/cells.mjs sampleCells(40, 45): every behaviour, id format, fault and traffic at least once), each run
 * on the real SDK 1.32.2 client and servers on 127.0.0.1 with SSE connections the lab's proxy really drops, and
 * forkwatch on the real OpenTelemetry SDK on the client and on every server process. Each cell asserts the three
 * invariants: (a) no page-read signal on a lossless run, (b) every loss provable from a side counted by that side,
 * (c) every lossy run at least exposure on the client.
 *
 * Size and time: 40 cells of the 558 runnable, on 2 lanes: 72 s of tests on this 2-core machine at load average ~4,
 * 143 s at load average ~20 (the whole matrix is `npm run matrix`: 549 s on 3 lanes at load ~7, see docs/matrix.md).
 * (a) is asserted strictly; a cell that breaks (b) or (c) must break for a cause docs/matrix.md names (the open
 * gaps of issue 45), never an unexplained one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { parse } from 'yaml';
// @ts-expect-error: plain ESM module without types
import { sampleCells } from '../../lab/matrix/cells.mjs';
// @ts-expect-error: plain ESM module without types
import { ORACLE_SERIES } from '../../lab/matrix/oracle.mjs';
// @ts-expect-error: plain ESM module without types
import { runMatrix } from '../../lab/matrix/run.mjs';
// @ts-expect-error: plain ESM module without types
import { cause, countedBy } from '../../lab/matrix/table.mjs';
import { METRICS } from '../../src/shared/names';

const SAMPLE_SIZE = 40;
const SEED = 45;

interface Verdict {
  name: string;
  cell: { behaviour: string; ids: string; fault: string; traffic: string };
  sent: number;
  lost: number;
  lossy: boolean;
  violations: string[];
  proof: { client?: string; server?: string };
  error?: string;
}

const cells: { name: string }[] = sampleCells(SAMPLE_SIZE, SEED);
let verdicts = new Map<string, Verdict>();

describe('the ground-truth matrix, a seeded sample', () => {
  beforeAll(async () => {
    const list: Verdict[] = await runMatrix(cells, { lanes: 2 });
    verdicts = new Map(list.map(v => [v.name, v]));
  }, 600_000);

  test('the sample covers lossless and lossy runs, every behaviour, id format, fault and traffic', () => {
    const all = [...verdicts.values()];
    expect(all).toHaveLength(SAMPLE_SIZE);
    expect(all.filter(v => v.lossy).length).toBeGreaterThan(0);
    expect(all.filter(v => !v.lossy).length).toBeGreaterThan(0);
    for (const key of ['behaviour', 'ids', 'fault', 'traffic'] as const)
      expect(new Set(all.map(v => v.cell[key])).size).toBeGreaterThan(2);
    // Every cell sent something: a cell whose app never got to send would prove nothing.
    expect(all.filter(v => v.sent === 0)).toEqual([]);
  });

  test('the series the oracle reads are forkwatch metrics, and its page-read series are read by paging alerts', () => {
    const names = new Set(Object.values(METRICS).map(m => m.prometheusName));
    for (const series of [...ORACLE_SERIES.page, ...ORACLE_SERIES.exposure]) expect(names).toContain(series);
    const file = (name: string) => readFileSync(join(__dirname, '../../alerts', name), 'utf8');
    type Rule = { alert?: string; record?: string; expr: string; labels?: { severity?: string } };
    const rules = [file('forkwatch-alerts.rules.yml'), file('forkwatch-recording.rules.yml')].flatMap(text =>
      (parse(text) as { groups: { rules: Rule[] }[] }).groups.flatMap(g => g.rules),
    );
    const recorded = new Map(rules.filter(r => r.record).map(r => [r.record as string, r.expr]));
    const paging = rules
      .filter(r => r.alert && r.labels?.severity === 'critical')
      .map(r => r.expr.replace(/job:[a-z_:0-9]+/g, rec => recorded.get(rec) ?? rec))
      .join('\n');
    for (const series of ORACLE_SERIES.page) expect(paging).toContain(series);
  });

  // (a) holds in every cell of the whole matrix (docs/matrix.md: 0 false pages in 558): asserted strictly, a false
  // page fails CI. (b) and (c) still break in cells whose causes docs/matrix.md names as the open gaps of issue 45
  // (a living server that counts no loss it sent, split-brain loss no client can see, codec gaps): each such cell
  // must break for a named cause, never an unexplained one, and the count of broken cells is printed so a
  // regression shows. Fixing a gap shrinks the table; a new kind of miss fails here.
  test.each(cells.map(c => c.name))('%s: no false page; any miss has a named cause', name => {
    const v = verdicts.get(name);
    expect(v, `no verdict for ${name}`).toBeDefined();
    const detail = v
      ? `${v.lost}/${v.sent} lost; proof ${JSON.stringify(v.proof)}; client ${countedBy(v, 'client')}; servers ${countedBy(v, 'server')}${v.error ? `; error ${v.error}` : ''}`
      : '';
    expect(v?.violations ?? [], detail).not.toContain('a');
    if ((v?.violations ?? []).length > 0) {
      const why = cause(v);
      console.log(`matrix: ${name} breaks ${v?.violations.join(', ')}: ${why} (${detail})`);
      expect(why, detail).not.toMatch(/unexplained|false page/);
    }
  });
});
