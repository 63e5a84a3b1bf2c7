/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What each Node.js line of scripts/runtimes.mjs really runs, as vitest itself selects it (`vitest list --filesOnly`
 * with the line's arguments), not as the lists read. Suites whose behaviour differs per line must run on every line
 * (issue 47: test/revived/ and test/instrumentation-info.test.ts ran on Node 24 alone).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { RUNTIMES, suiteArguments } from '../../scripts/runtimes.mjs';

const root = join(__dirname, '../..');

interface Runtime {
  pkg: string;
  line: number;
  suites: 'all' | { include: string[]; exclude?: string[] };
}

/** The test files vitest selects with a runtime's arguments, relative to the repository. */
function selectedFiles(runtime: Runtime): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-runtimes-'));
  try {
    const out = join(dir, 'files.json');
    const listed = spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'list', '--filesOnly', `--json=${out}`, ...suiteArguments(runtime.suites)],
      { cwd: root, encoding: 'utf8', timeout: 120_000 },
    );
    expect(listed.status, listed.stderr).toBe(0);
    return (JSON.parse(readFileSync(out, 'utf8')) as { file: string }[]).map(f => relative(root, f.file)).sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Suites that behave differently per Node line (module loading, timers, undici, the SDKs' streams). */
const PER_LINE = [
  ...readdirSync(join(root, 'test/revived'))
    .filter(f => f.endsWith('.test.ts'))
    .map(f => `test/revived/${f}`),
  'test/instrumentation-info.test.ts',
].sort();

const lines = (RUNTIMES as Runtime[]).filter(r => r.pkg === 'node22' || r.pkg === 'node24' || r.pkg === 'node26');

describe('the suites each Node.js line runs', () => {
  test('the lines are 22, 24 and 26, and test/revived/ holds the revived-session, storm, session-end and answered-request suites', () => {
    expect(lines.map(r => r.line)).toEqual([22, 24, 26]);
    expect(PER_LINE).toEqual([
      'test/instrumentation-info.test.ts',
      'test/revived/answered-requests.test.ts',
      'test/revived/reconnect-storms.test.ts',
      'test/revived/revived-sessions.test.ts',
      'test/revived/session-end.test.ts',
      'test/revived/stateless.test.ts',
    ]);
  });

  test.each(lines.map(r => [r.pkg, r] as const))(
    '%s runs test/revived/ and test/instrumentation-info.test.ts',
    (_, runtime) => {
      const files = selectedFiles(runtime);
      expect(files.length).toBeGreaterThan(PER_LINE.length);
      expect(PER_LINE.filter(f => !files.includes(f))).toEqual([]);
    },
    180_000,
  );
});
