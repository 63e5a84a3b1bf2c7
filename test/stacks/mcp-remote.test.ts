/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * mcp-remote (pinned in test/sdk-versions/mcp-remote): a stdio proxy whose bundled MCP 2.x client sends every request
 * through the `undici` package's fetch, never the global one, and has no class forkwatch can patch. Its own process
 * runs with forkwatch preloaded, driven over stdio (lab/mcp-remote-client.cjs), against the lab's real SDK servers;
 * the proxy cuts its GET stream in the middle of a frame and its client resumes with the last id it saw. Judged on
 * undici's channels on every line (client/wire/undici-channels.ts): on Node 22 they were not subscribed, and two
 * real forks produced no series at all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { resumeSpans, runLabScenario, sample } from '../support/lab';

const appFolder = join(__dirname, '../sdk-versions/mcp-remote');
const options = { client: 'mcp-remote' as const, resolveFrom: appFolder };
const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;

test('the app folder pins mcp-remote 0.15, whose client fetches through the undici package 7.x', () => {
  const version = (pkg: string) =>
    JSON.parse(readFileSync(join(appFolder, 'node_modules', pkg, 'package.json'), 'utf8')).version as string;
  expect(version('mcp-remote')).toMatch(/^0\.15\./);
  expect(version('undici')).toMatch(/^7\./);
  const bundle = readFileSync(join(appFolder, 'node_modules/mcp-remote/dist/proxy.js'), 'utf8');
  expect(bundle).not.toMatch(/from "@modelcontextprotocol\//); // its MCP client is bundled: nothing to patch
});

test('a healthy resume (integer ids) on the process that holds the log is resumed, with no fork', async () => {
  const report = await runLabScenario('healthy', { ...options, serverA: { store: { idFormat: 'integer' } } });
  expect(report.sdkPatched).toBe(true); // the wire observer is installed
  expect(report.lost).toEqual([]);
  expect(report.httpLog.filter(e => e.kind === 'resume' && e.status === 200)).toHaveLength(1);
  expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'resumed' })).toBe(1);
  expect(sample(report.metrics, resumes, { transport: 'streamable_http', outcome: 'forked' })).toBe(0);
  expect(report.forkInfos).toEqual([]);
});

test('a resume on a process whose integer ids start again is counted as a fork (id_regressed), once', async () => {
  const report = await runLabScenario('live-fork-integer-ids', options);
  expect(report.lost.length).toBeGreaterThan(0);
  expect(report.received.some(d => d.origin === 'B')).toBe(true);
  expect(report.httpLog.filter(e => e.kind === 'resume' && e.target === 'B')).toHaveLength(1);
  expect(sample(report.metrics, forks, { transport: 'streamable_http', reason: 'id_regressed' })).toBe(1);
  expect(sample(report.metrics, resumes, { outcome: 'forked' })).toBe(1);
  expect(report.forkInfos).toMatchObject([
    { outcome: 'forked', reason: 'id_regressed', cursor: '6', firstEventId: '1' },
  ]);
  expect(resumeSpans(report)[0]!.status).toBe(2); // ERROR
});
