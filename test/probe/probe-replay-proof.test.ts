/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The standalone replay judged on proof, both ways (issue 45.4), against real SDK 1.32.2 servers on 127.0.0.1: a
 * replay passes on the probe's own markers, on codec continuity, or on time-stamped ids that predate the resume;
 * it fails on proof of a fresh log; and live traffic the probe cannot tell from its own events leaves it
 * `not_tested`, never a failure of a correct store.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { runProbeCli } from '../../src/cli/probe/cli';
import type { ProbeReport } from '../../src/cli/probe/report';
import { type FixtureServer, startFixture } from './fixtures/servers';

const TIMEOUT_MS = 1500;
const servers: FixtureServer[] = [];

async function probeFixture(args: string[], ...extra: string[]): Promise<{ code: number; report: ProbeReport }> {
  const server = await startFixture('sdk-server.mjs', args);
  servers.push(server);
  let stdout = '';
  const code = await runProbeCli([server.url, '--json', '--timeout', String(TIMEOUT_MS), '--resumes', '2', ...extra], {
    stdout: text => (stdout += text),
    stderr: () => undefined,
    env: {},
  });
  return { code, report: JSON.parse(stdout) as ProbeReport };
}

afterAll(async () => {
  await Promise.all(servers.map(s => s.stop()));
});

describe('a correct store with live traffic the probe cannot cause', () => {
  // Issue 45's case: a logging notification every 500 ms on the standalone stream, roots ignored. The probe took a
  // live notification for its own marker and failed `replay` ("none of the events the probe made while away").
  test('SDK-shaped ids, a 500 ms ticker, roots ignored: RESUMABLE, the replay proved by the ids’ time stamps', async () => {
    const { code, report } = await probeFixture(['--store', 'sdk-ids', '--notify', 'none', '--live', '500']);
    const standalone = report.streams.standalone;
    expect(standalone.cursor.real).toMatch(/^_GET_stream_\d{13}_/);
    expect(standalone.tried.join('\n')).toMatch(/did not arrive again after the next/);
    expect(standalone.conditions.replay.status).not.toBe('fail');
    expect(report.verdict).not.toBe('not_resumable');
    // On this machine the away time covers at least one tick, stored while away and replayed first.
    expect(standalone.conditions.replay).toMatchObject({ status: 'pass', evidence: { proof: 'time' } });
    expect(standalone.conditions.replay.detail).toMatch(/stored while away/);
    expect(report.verdict).toBe('resumable');
    expect(code).toBe(0);
  });

  test('the SDK example store (InMemoryEventStore) with the same ticker: still NOT RESUMABLE', async () => {
    const { code, report } = await probeFixture(['--store', 'sdk-example', '--notify', 'none', '--live', '500']);
    expect(report.verdict).toBe('not_resumable');
    expect(report.conditions.bogus_cursor_refused.status).toBe('fail');
    // '_GET_stream_…'.split('_')[0] is '': nothing replayed on the standalone stream.
    expect(report.streams.standalone.conditions.replay.status).toBe('fail');
    expect(code).toBe(1);
  });
});

describe('a fresh log with live events', () => {
  test('SDK-shaped ids, the notify tool and a ticker: the events made while away never come, NOT RESUMABLE', async () => {
    const { code, report } = await probeFixture(
      ['--store', 'sdk-ids-fresh-log', '--notify', 'tool', '--live', '500'],
      '--notify-tool',
      'notify',
    );
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('notify_tool');
    expect(standalone.conditions.cursor_accepted.status).toBe('pass');
    // Live events stamped after the resume are no replay; the tool's own events (they come on every call) never came.
    expect(standalone.conditions.replay.status).toBe('fail');
    expect(standalone.conditions.replay.detail).toMatch(/none of the events the probe made while away/);
    expect(report.verdict).toBe('not_resumable');
    expect(code).toBe(1);
  });

  test('SDK-shaped ids, a ticker, roots ignored: live events after the resume are never taken for a replay', async () => {
    const { report } = await probeFixture(['--store', 'sdk-ids-fresh-log', '--notify', 'none', '--live', '500']);
    const replay = report.streams.standalone.conditions.replay;
    expect(replay.status).toBe('not_tested');
    expect(replay.detail).toMatch(/cannot tell the events it made while away from live ones/);
    // The request streams' fresh log is proven lost: nothing follows the cursor.
    expect(report.conditions.replay.status).toBe('fail');
    expect(report.verdict).toBe('not_resumable');
  });
});

describe('a notify tool whose notifications carry a counter (issue 51)', () => {
  test('a correct store with SDK-shaped ids: RESUMABLE (no marker is expected to come again)', async () => {
    const { code, report } = await probeFixture(
      ['--store', 'sdk-ids', '--notify', 'counter'],
      '--notify-tool',
      'notify',
    );
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('notify_tool');
    expect(standalone.conditions.replay).toMatchObject({ status: 'pass', evidence: { proof: 'time' } });
    expect(report.verdict).toBe('resumable');
    expect(code).toBe(0);
  });

  test('a correct store with opaque ids: COULD NOT TEST, never a failure', async () => {
    const { code, report } = await probeFixture(['--store', 'uuid', '--notify', 'counter'], '--notify-tool', 'notify');
    const standalone = report.streams.standalone;
    expect(standalone.conditions.replay.status).toBe('not_tested');
    expect(standalone.conditions.repeated_resumes.status).not.toBe('fail');
    expect(report.verdict).toBe('untestable');
    expect(code).toBe(2);
  });
});
