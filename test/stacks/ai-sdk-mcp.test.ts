/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The Vercel AI SDK's MCP client (@ai-sdk/mcp, pinned in test/sdk-versions/ai-sdk-mcp): its own HTTP transport, not
 * exported and not built on the MCP SDK, judged on the wire (client/wire/) against the lab's real SDK
 * servers. Its reconnect follows a stream error only, so every cut is a connection dropped in the middle of a frame.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { firstFrameEvents, resumeSpans, runLabScenario, sample } from '../support/lab';

const appFolder = join(__dirname, '../sdk-versions/ai-sdk-mcp');
const options = { client: 'ai-sdk' as const, resolveFrom: appFolder };
const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;

test('the app folder pins @ai-sdk/mcp 2.x', () => {
  const pkg = JSON.parse(readFileSync(join(appFolder, 'node_modules/@ai-sdk/mcp/package.json'), 'utf8'));
  expect(pkg.version).toMatch(/^2\./);
});

describe.each(['esm', 'cjs'] as const)('@ai-sdk/mcp, %s', moduleSystem => {
  // The SDK's standalone stream key `_GET_stream` is shared by every session: accepted, but not proven continuous.
  test('a resume on the process that holds the log is accepted as unverified, with no fork', async () => {
    const report = await runLabScenario('healthy', { ...options, moduleSystem });
    expect(report.sdkPatched).toBe(true); // fetch observed
    expect(report.lost).toEqual([]);
    expect(report.httpLog.filter(e => e.kind === 'resume' && e.status === 200)).toHaveLength(1);
    expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'unverified' })).toBe(1);
    expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'forked' })).toBe(0);
    expect(report.forkInfos).toEqual([]);
    const [event] = firstFrameEvents(report);
    expect(event).toMatchObject({ 'forkwatch.resume.outcome': 'unverified', 'forkwatch.codec': 'sdk' });
    // The same span and events as for an SDK transport: cursor event, then first-frame event.
    expect(resumeSpans(report)[0]!.events.map(e => e.name)).toEqual([
      'forkwatch.resume.cursor',
      'forkwatch.resume.first_frame',
    ]);
  });

  test('a resume on a process whose integer ids start again is forked (id_regressed)', async () => {
    const report = await runLabScenario('live-fork-integer-ids', { ...options, moduleSystem });
    expect(report.lost.length).toBeGreaterThan(0);
    expect(report.received.some(d => d.origin === 'B')).toBe(true);
    expect(sample(report.metrics, forks, { transport: 'streamable_http', reason: 'id_regressed' })).toBe(1);
    expect(sample(report.metrics, resumes, { outcome: 'forked' })).toBe(1);
    expect(report.forkInfos).toMatchObject([
      { outcome: 'forked', reason: 'id_regressed', cursor: '6', firstEventId: '1' },
    ]);
    expect(resumeSpans(report)[0]!.status).toBe(2); // ERROR
  });
});

test('@ai-sdk/mcp, fail-loud: the forked frames never reach the client and its onerror gets StreamForkDetected', async () => {
  const report = await runLabScenario('fail-loud', { ...options, moduleSystem: 'esm' });
  expect(report.errors.some(e => e.name === 'StreamForkDetected')).toBe(true);
  expect(report.received.filter(d => d.origin === 'B')).toEqual([]);
  expect(sample(report.metrics, forks, { reason: 'id_regressed' })).toBeGreaterThanOrEqual(1);
});
