/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Issue 45's client-only silent forks, with the real SDK 1.32.2 client and servers: a resume lands on a process
 * without the log that answers 200 and sends nothing, the stream is cut after 500 ms, and the client reconnects
 * without Last-Event-ID (typescript-sdk #2499) to the process with the log and gets live events; 7 events are lost.
 * The reconnect is judged against the cursor it dropped: with the SDK's ids nothing proves the gap (exposure); with
 * per-session integers learned dense (1-5 one by one, cursor 5, first id 13) the client proves 7 lost. The server
 * that holds the log counts the 7 in its delivery ledger either way.
 */
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { type LabReport, firstFrameEvents, resumeSpans, runLabScenario, sample } from '../support/lab';

const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;
const skipped = METRICS.clientResumeSkippedEvents.prometheusName;
const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const t = { transport: 'streamable_http' };
const SPAN_STATUS_ERROR = 2;

const run = (name: string) =>
  runLabScenario(name, {
    moduleSystem: 'cjs',
    deliveryVerdicts: true,
    serverInstrumentation: { deliveryWindowMs: 1500 },
    timeoutMs: 60_000,
  } as Parameters<typeof runLabScenario>[1]);

/** The reconnect the SDK made without the cursor, as the proxy saw it. */
function cursorlessReconnects(r: LabReport) {
  return r.httpLog.filter(e => e.kind === 'get' && e.target === 'A' && e.status === 200).slice(1);
}

function serverLoss(r: LabReport, name: 'A' | 'B') {
  const metrics = r.servers?.[name]?.metrics ?? '';
  return ['stream_moved', 'no_listener', 'dropped'].reduce(
    (n, reason) => n + (sample(metrics, undelivered, { transport: 'streamable_http', reason }) ?? 0),
    0,
  );
}

describe('a reconnect is judged against the last consumed id, with or without a cursor', () => {
  test('SDK ids: inconclusive, then the cursor-less stream is exposure (counted, never nothing); the server with the log counts the 7 lost', async () => {
    const r = await run('frameless-resume-cut-sdk-ids');
    expect(r.lost).toEqual([6, 7, 8, 9, 10, 11, 12]);
    expect(r.httpLog.filter(e => e.kind === 'resume').map(e => [e.target, e.status])).toEqual([['B', 200]]);
    expect(cursorlessReconnects(r)).toHaveLength(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'inconclusive' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'cursor_dropped_after_inconclusive' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'forked' })).toBe(0);
    expect(sample(r.metrics, forks, { ...t, reason: 'cursor_dropped' })).toBe(0);
    const [first, dropped] = firstFrameEvents(r);
    expect(first).toMatchObject({
      'forkwatch.resume.outcome': 'inconclusive',
      'forkwatch.resume.reason': 'stream_ended',
    });
    // Judged on the cursor-less stream's first frame, an SDK id that proves nothing about the gap.
    expect(dropped).toMatchObject({
      'forkwatch.resume.outcome': 'cursor_dropped_after_inconclusive',
      'forkwatch.codec': 'sdk',
    });
    expect(String(dropped!['forkwatch.resume.first_event_id'])).toMatch(/^_GET_stream_\d+_/);
    expect(resumeSpans(r)[1]!.attributes['forkwatch.evidence']).toBe('exposure');
    expect(resumeSpans(r)[1]!.status).not.toBe(SPAN_STATUS_ERROR);
    // The server that holds the log stored 7 events nobody came back for.
    expect(serverLoss(r, 'A')).toBe(7);
    expect(
      sample(r.servers!.B!.metrics, METRICS.serverResumes.prometheusName, { ...t, outcome: 'unknown_cursor' }),
    ).toBe(1);
  });

  test('per-session integer ids learned dense: cursor 5, first id 13, proven loss of 7 on the client alone, and on the server', async () => {
    const r = await run('frameless-resume-cut-integer-ids');
    expect(r.lost).toEqual([6, 7, 8, 9, 10, 11, 12]);
    expect(r.httpLog.filter(e => e.kind === 'resume').map(e => [e.target, e.status, e.lastEventId])).toEqual([
      ['B', 200, '5'],
    ]);
    expect(cursorlessReconnects(r)).toHaveLength(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'inconclusive' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'forked' })).toBe(1);
    expect(sample(r.metrics, resumes, { ...t, outcome: 'cursor_dropped_after_inconclusive' })).toBe(0);
    expect(sample(r.metrics, forks, { ...t, reason: 'cursor_dropped' })).toBe(1);
    expect(sample(r.metrics, `${skipped}_sum`)).toBe(7);
    expect(sample(r.metrics, `${skipped}_count`)).toBe(1);
    const dropped = firstFrameEvents(r)[1]!;
    expect(dropped).toMatchObject({
      'forkwatch.resume.outcome': 'forked',
      'forkwatch.resume.reason': 'cursor_dropped',
      'forkwatch.resume.first_event_id': '13',
      'forkwatch.resume.skipped_events': 7,
      'forkwatch.codec': 'integer',
    });
    const span = resumeSpans(r)[1]!;
    expect(span.status).toBe(SPAN_STATUS_ERROR);
    expect(span.attributes['forkwatch.evidence']).toBe('proven_loss');
    expect(r.forkInfos.map(f => f.reason)).toEqual(['cursor_dropped']);
    expect(serverLoss(r, 'A')).toBe(7);
  });
});
