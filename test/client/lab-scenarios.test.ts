/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The client instrumentation against the real MCP SDK client and servers on 127.0.0.1, through a proxy that
 * really cuts the SSE connection mid-frame. Every scenario runs in a CommonJS and in an ESM client process.
 */
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { firstFrameEvents, resumeSpans, runLabScenario, sample } from '../support/lab';

const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;
const duplicates = METRICS.clientDuplicateEvents.prometheusName;
const serverResumes = METRICS.serverResumes.prometheusName;
const t = { transport: 'streamable_http' };
/** SpanStatusCode.ERROR, as the lab reports a span's status. */
const SPAN_STATUS_ERROR = 2;

describe.each(['cjs', 'esm'] as const)('fork lab, %s client', moduleSystem => {
  test('a true resume on one process: unverified (the standalone stream key proves nothing), and no frame lost', async () => {
    const r = await runLabScenario('healthy', { moduleSystem });
    expect(r.sdkPatched).toBe(true);
    expect(r.lost).toEqual([]);
    expect(r.received.map(d => d.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(r.duplicatesSeenByApp).toBe(0);
    // Accepted, but not counted lossless: the SDK's `_GET_stream` ids cannot prove continuity.
    expect(sample(r.metrics, resumes, { ...t, outcome: 'unverified' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'resumed' })).toBe(0);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'forked' })).toBe(0);
    expect(sample(r.metrics, duplicates, t)).toBe(0);
    const [cursorEvent] = resumeSpans(r)[0]!.events;
    expect(cursorEvent!.name).toBe('forkwatch.resume.cursor');
    expect(cursorEvent!.attributes['forkwatch.resume.cursor']).toBe(
      r.httpLog.find(e => e.kind === 'resume')!.lastEventId,
    );
    expect(cursorEvent!.attributes['forkwatch.session.hash']).toMatch(/^[0-9a-f]{16}$/);
    expect(firstFrameEvents(r)[0]).toMatchObject({
      'forkwatch.resume.verdict': 'resumed',
      'forkwatch.resume.outcome': 'unverified',
      // `_GET_stream` is every session's standalone stream key: a match cannot prove continuity.
      'forkwatch.continuity.verified': false,
      'forkwatch.codec': 'sdk',
    });
    expect(sample(r.metrics, `${METRICS.clientResumeGapSeconds.prometheusName}_count`)).toBe(1);
  });

  test('a silent 200 from a process without the log: inconclusive, then the cursor dropped on the next reconnect', async () => {
    const r = await runLabScenario('silent-fork', { moduleSystem });
    expect(r.lost).toEqual([4, 5, 6]);
    expect(r.httpLog.filter(e => e.kind === 'resume').map(e => e.status)).toEqual([200]);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'inconclusive' })).toBe(1);
    // The resume got no frame because a live process held it open with keep-alives past the verdict timeout (not a
    // replica going away, whose stream ends): the cursor dropped after it stays a fork. The server that answered the
    // silent 200 counts unknown_cursor.
    expect(sample(r.metrics, forks, { ...t, reason: 'cursor_dropped' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'cursor_dropped_after_inconclusive' })).toBe(0);
    expect(firstFrameEvents(r)[0]).toMatchObject({
      'forkwatch.resume.outcome': 'inconclusive',
      'forkwatch.resume.reason': 'timeout',
    });
    const dropped = resumeSpans(r)[1]!;
    expect(dropped.attributes['forkwatch.resume.reason']).toBe('cursor_dropped');
    expect(dropped.attributes['forkwatch.evidence']).toBe('proven_loss');
    expect(dropped.status).toBe(SPAN_STATUS_ERROR);
    expect(dropped.events[0]!.attributes['forkwatch.resume.cursor_held']).toBe(true);
    // The inconclusive resume proves nothing either way: no error status.
    expect(resumeSpans(r)[0]!.status).not.toBe(SPAN_STATUS_ERROR);
    expect(sample(r.servers!.B!.metrics, serverResumes, { ...t, outcome: 'unknown_cursor' })).toBe(1);
  });

  test('a fresh stream with live events, SDK-format ids: forked on the first frame, stream_changed', async () => {
    const r = await runLabScenario('live-fork-sdk-ids', { moduleSystem });
    expect(r.received.some(d => d.origin === 'B')).toBe(true);
    expect(r.lost.length).toBeGreaterThan(0);
    expect(sample(r.metrics, forks, { ...t, reason: 'stream_changed' })).toBe(1);
    expect(r.forkInfos.map(f => f.reason)).toEqual(['stream_changed']);
    expect(String(firstFrameEvents(r)[0]!['forkwatch.resume.first_event_id'])).toMatch(/^_GET_stream_\d+_/);
  });

  test('integer ids starting again from 1: forked, id_regressed (cursor > 1, first id 1)', async () => {
    const r = await runLabScenario('live-fork-integer-ids', { moduleSystem });
    expect(r.lost).toEqual([4, 5, 6]);
    expect(sample(r.metrics, forks, { ...t, reason: 'id_regressed' })).toBe(1);
    expect(firstFrameEvents(r)[0]!['forkwatch.resume.first_event_id']).toBe('1');
    expect(Number(r.httpLog.find(e => e.kind === 'resume')!.lastEventId)).toBeGreaterThan(1);
  });

  test('a process without an event store ignores the cursor: forked, id_missing', async () => {
    const r = await runLabScenario('live-fork-no-store', { moduleSystem });
    expect(r.lost).toEqual([4, 5, 6]);
    expect(sample(r.metrics, forks, { ...t, reason: 'id_missing' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'forked' })).toBe(1);
  });

  test('a second reconnect after a fork delivers duplicates, and they are counted', async () => {
    const r = await runLabScenario('fork-then-return', { moduleSystem });
    expect(r.duplicatesSeenByApp).toBeGreaterThan(0);
    expect(sample(r.metrics, duplicates, t)).toBeGreaterThanOrEqual(r.duplicatesSeenByApp);
    expect(r.forkInfos.map(f => f.reason)).toEqual(['id_regressed', 'id_reused']);
  });

  test('fail-loud mode: no forked frame reaches the app, which gets StreamForkDetected', async () => {
    const r = await runLabScenario('fail-loud', { moduleSystem });
    expect(r.received.filter(d => d.origin === 'B')).toEqual([]);
    const fork = r.errors.find(e => e.name === 'StreamForkDetected');
    expect(fork?.message).toContain('id_regressed');
    expect(sample(r.metrics, forks, { ...t, reason: 'id_regressed' })).toBe(1);
    // The SDK did not quietly reconnect the cut stream: one resume only.
    expect(r.httpLog.filter(e => e.kind === 'resume' || (e.kind === 'get' && e.target === 'B'))).toHaveLength(1);
  });

  test.each([
    ['rejected-400', 400, 'rejected'],
    ['rejected-404', 404, 'rejected'],
    // The SDK's servers answer 409 only while the stream still has a connection there (a dead one a balancer holds).
    ['rejected-409', 409, 'rejected_stream_held'],
  ])('a resume answered %s: %s', async (scenario, status, outcome) => {
    const r = await runLabScenario(scenario, { moduleSystem });
    const answered = r.httpLog.filter(e => e.kind === 'resume').map(e => e.status);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    expect(new Set(answered)).toEqual(new Set([status]));
    expect(sample(r.metrics, resumes, { ...t, outcome })).toBe(answered.length);
    expect(
      sample(r.metrics, resumes, { ...t, outcome: outcome === 'rejected' ? 'rejected_stream_held' : 'rejected' }),
    ).toBe(0);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'forked' })).toBe(0);
    expect(resumeSpans(r).map(s => s.attributes['http.response.status_code'])).toEqual(answered);
  });
});
