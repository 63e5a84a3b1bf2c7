/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe against the fleet lab's real parts (the reference deployment in deploy/): Debian's HAProxy in front of
 * three replicas of deploy/mcp-replica.cjs, sessions in Debian's Redis, event logs in Redis (shared) or per
 * replica. The replicas' tool `emit` sends notifications on the standalone stream (--notify-tool).
 */
import { afterEach, describe, expect, test } from 'vitest';
import { runProbeCli } from '../../src/cli/probe/cli';
import type { ProbeReport } from '../../src/cli/probe/report';
import { type Fleet, startFleet } from './fixtures/fleet-parts';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
});

async function probe(url: string): Promise<{ code: number; report: ProbeReport; ms: number }> {
  let stdout = '';
  const started = Date.now();
  const code = await runProbeCli(
    [url, '--json', '--resumes', '6', '--notify-tool', 'emit', '--notify-args', '{"from":1,"count":2}'],
    { stdout: text => (stdout += text), stderr: () => undefined, env: {} },
  );
  return { code, report: JSON.parse(stdout) as ProbeReport, ms: Date.now() - started };
}

describe('HAProxy, Redis and three replicas (deploy/)', () => {
  test('sticky on Mcp-Session-Id with the shared Redis store: RESUMABLE on every stream kind', async () => {
    fleet = await startFleet('sticky', 'redis');
    const { code, report } = await probe(fleet.url);
    expect(report.streams.request.verdict).toBe('resumable');
    expect(report.resumes.outcomes.resumed).toBe(6);
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('notify_tool');
    for (const name of ['event_ids', 'cursor_accepted', 'replay', 'continues', 'bogus_cursor_refused'] as const)
      expect(standalone.conditions[name].status, name).toBe('pass');
    // HAProxy does not pass the probe's close on: the replica holds the dropped GET until its next keep-alive,
    // answering 409 meanwhile. Said plainly, and the one stream is not resumed again and again.
    if (standalone.notes.length > 0) {
      expect(standalone.notes.join('\n')).toMatch(/held the probe's dropped standalone connection/);
      expect(standalone.conditions.repeated_resumes.status).toBe('not_applicable');
    } else {
      expect(standalone.conditions.repeated_resumes.status).toBe('pass');
    }
    expect(report.verdict).toBe('resumable');
    expect(code).toBe(0);
  }, 120_000);

  test('round-robin with the shared Redis store: NOT RESUMABLE, standalone notifications made on another replica never arrive', async () => {
    fleet = await startFleet('round-robin', 'redis');
    const { code, report } = await probe(fleet.url);
    // Request streams replay from Redis on any replica.
    expect(report.conditions.replay.status).toBe('pass');
    expect(report.resumes.outcomes.forked).toBe(0);
    const standalone = report.streams.standalone.conditions;
    expect([standalone.continues.status, standalone.event_ids.status]).toContain('fail');
    expect(report.verdict).toBe('not_resumable');
    expect(code).toBe(1);
  }, 120_000);

  test('round-robin with an event log per replica: NOT RESUMABLE, resumes on the other replicas fork', async () => {
    fleet = await startFleet('round-robin', 'local');
    const { code, report } = await probe(fleet.url);
    expect(report.conditions.repeated_resumes.status).toBe('fail');
    expect(report.resumes.outcomes.forked).toBeGreaterThan(0);
    expect(report.resumes.outcomes.resumed).toBeGreaterThan(0);
    expect(code).toBe(1);
  }, 120_000);
});
