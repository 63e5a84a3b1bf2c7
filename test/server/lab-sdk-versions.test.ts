/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The server instrumentation across server SDK lines, in the fork lab (CommonJS and ESM server processes, patched by
 * the module hooks): @modelcontextprotocol/sdk 1.17 and 1.24 (the Node transport before 1.25, app folders under
 * test/sdk-versions) and @modelcontextprotocol/server 2.x. The client is the latest 1.x.
 *
 * Not every scenario exists on every line: before 1.23 there is no getStreamIdForEventId and no 409 on resume (1.17
 * replays from any store and registers whatever it returns), and before 1.30 no keep-alives, so a silent stream
 * never sends a byte (the lab proxy then never forwards its 200; the old path's unknown_cursor is covered in
 * process by node-transport-v1.24.test.ts).
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { sample } from '../support/lab';
import { runLab, serverResumeSpans, serverView } from './lab-support';
import { versionsDir } from './support';

const resumes = METRICS.serverResumes.prometheusName;
const gap = METRICS.serverResumeGapEvents.prometheusName;
const t = { transport: 'streamable_http' };

const lines = [
  {
    label: '@modelcontextprotocol/sdk 1.17',
    options: { serverResolveFrom: join(versionsDir, 'v1.17') },
    version: /^@modelcontextprotocol\/sdk@1\.17\./,
    rejections: false,
  },
  {
    label: '@modelcontextprotocol/sdk 1.24',
    options: { serverResolveFrom: join(versionsDir, 'v1.24') },
    version: /^@modelcontextprotocol\/sdk@1\.24\./,
    rejections: true,
  },
  {
    label: '@modelcontextprotocol/server 2.x',
    options: { serverSdk: 'v2' as const },
    version: /^@modelcontextprotocol\/server@2\./,
    rejections: true,
  },
];

describe.each(lines)('$label server', ({ options, version }) => {
  test.each(['cjs', 'esm'] as const)('%s: replayed with the gap; no store: ignored', async moduleSystem => {
    const healthy = await runLab('healthy', { moduleSystem, ...options });
    const A = healthy.servers.A!;
    expect(A.sdkVersion).toMatch(version);
    expect(A.moduleSystem).toBe(moduleSystem);
    expect(A.sdkPatched).toBe(true);
    expect(healthy.lost).toEqual([]);
    expect(sample(A.metrics, resumes, { ...t, outcome: 'replayed' })).toBe(1);
    expect([2, 3]).toContain(sample(A.metrics, `${gap}_sum`)); // 3 emitted while away (2 if the cut kept the first)
    expect(serverResumeSpans(A)[0]!.attributes['forkwatch.replay.events']).toBe(sample(A.metrics, `${gap}_sum`));
    expect(serverResumeSpans(A)[0]!.parentSpanId).toBe(
      healthy.spans.find(s => s.name === 'forkwatch.client.resume')!.spanId,
    );

    const noStore = await runLab('live-fork-no-store', { moduleSystem, ...options });
    expect(serverView(noStore.servers).B).toMatchObject({
      outcomes: ['ignored'],
      resumes: { ignored: 1, replayed: 0 },
    });
  });
});

// Lines whose transport answers 400 and 409 to a resume (1.17 has no 409 and replays from any store).
describe.each(lines.filter(line => line.rejections))('$label server', ({ options }) => {
  test('cjs: 400 and 409 answered by the transport: rejected', async () => {
    const r400 = await runLab('rejected-400', { moduleSystem: 'cjs', ...options });
    const r409 = await runLab('rejected-409', { moduleSystem: 'cjs', ...options });
    const answered = (r: typeof r400, status: number) =>
      r.httpLog.filter(e => e.kind === 'resume' && e.status === status).length;
    expect(answered(r400, 400)).toBeGreaterThanOrEqual(2);
    expect(answered(r409, 409)).toBeGreaterThanOrEqual(2);
    expect(serverResumeSpans(r400.servers.B!).map(s => s.attributes['http.response.status_code'])).toEqual(
      Array(answered(r400, 400)).fill(400),
    );
    expect(serverResumeSpans(r409.servers.A!).map(s => s.attributes['http.response.status_code'])).toEqual(
      Array(answered(r409, 409)).fill(409),
    );
    expect(sample(r409.servers.A!.metrics, resumes, { ...t, outcome: 'rejected' })).toBe(answered(r409, 409));
  });
});

describe('@modelcontextprotocol/server 2.x server', () => {
  test.each(['cjs', 'esm'] as const)("%s: silent fork on the SDK's own store: unknown_cursor", async moduleSystem => {
    const r = await runLab('silent-fork', { moduleSystem, serverSdk: 'v2' });
    expect(r.servers.B!.sdkVersion).toMatch(/^@modelcontextprotocol\/server@2\./);
    expect(r.lost).toEqual([4, 5, 6]);
    expect(serverView(r.servers).B).toMatchObject({ outcomes: ['unknown_cursor'], replayedEvents: [0] });
  });
});
