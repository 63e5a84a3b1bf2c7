/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The fork and the healthy control every MCP client stack of lab/stacks/client-stacks.mjs goes through, ESM, from its
 * pinned app folder: the stack connects to the lab's real SDK servers (integer event ids, which prove order) through
 * the lab proxy, which drops the standalone SSE stream in the middle of a frame; the stack's transport reconnects
 * with Last-Event-ID, once to the process that holds the session's log and once to one that does not.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { firstFrameEvents, runLabScenario, sample } from '../support/lab';

const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;
// import-in-the-middle reads each stack's bundles (mastra's is 25,000 lines) on a CPU shared by the whole suite.
const SCENARIO_MS = 120_000;

export function clientStackTests(stack: { name: string; folder: string; pkg: string; version: RegExp }) {
  const resolveFrom = join(__dirname, '../sdk-versions', stack.folder);
  const options = { client: 'stack' as const, stack: stack.name, moduleSystem: 'esm' as const, resolveFrom };
  const timeouts = { timeoutMs: SCENARIO_MS - 10_000 };

  test(`the app folder pins ${stack.pkg}`, () => {
    const pkg = JSON.parse(readFileSync(join(resolveFrom, 'node_modules', stack.pkg, 'package.json'), 'utf8'));
    expect(pkg.version).toMatch(stack.version);
  });

  test(
    'healthy: the reconnect lands on the process that holds the log, resumed with nothing lost and no fork',
    async () => {
      const report = await runLabScenario('healthy', {
        ...options,
        ...timeouts,
        serverA: { store: { idFormat: 'integer' } },
      });
      expect(report.sdkPatched).toBe(true); // the stack's own SDK copy, patched through the loader hooks
      expect(report.httpLog.filter(e => e.kind === 'resume')).toMatchObject([{ target: 'A', status: 200 }]);
      expect(report.lost).toEqual([]);
      expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'resumed' })).toBe(1);
      expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'forked' })).toBe(0);
      for (const reason of ['id_missing', 'id_regressed', 'id_reused', 'stream_changed', 'cursor_dropped'])
        expect(sample(report.metrics, forks, { transport: 'streamable_http', reason })).toBe(0);
      expect(report.forkInfos).toEqual([]);
      expect(firstFrameEvents(report)).toMatchObject([
        { 'forkwatch.resume.outcome': 'resumed', 'forkwatch.codec': 'integer' },
      ]);
    },
    SCENARIO_MS,
  );

  test(
    'forked: the reconnect lands on a process whose integer ids start again, forkwatch_client_forks_total moves',
    async () => {
      const report = await runLabScenario('live-fork-integer-ids', { ...options, ...timeouts });
      expect(report.sdkPatched).toBe(true);
      expect(report.httpLog.filter(e => e.kind === 'resume')).toMatchObject([{ target: 'B', status: 200 }]);
      expect(report.lost).toEqual([4, 5, 6]); // sent by A while the stack was away, never replayed by B
      expect(report.received.some(d => d.origin === 'B')).toBe(true);
      expect(sample(report.metrics, forks, { transport: 'streamable_http', reason: 'id_regressed' })).toBe(1);
      expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'forked' })).toBe(1);
      expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'resumed' })).toBe(0);
      expect(report.forkInfos).toMatchObject([{ outcome: 'forked', reason: 'id_regressed', firstEventId: '1' }]);
    },
    SCENARIO_MS,
  );
}
