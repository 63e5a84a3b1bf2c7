/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The server instrumentation in the fork lab: real MCP SDK 1.32.2 server processes (instrumented by forkwatch,
 * loaded as CommonJS or ESM like the client), a real client (also instrumented) and a proxy that really drops the
 * SSE connection. Each test reads both views: the client's report and the servers' spans and metrics.
 * Shared by lab-scenarios.cjs.test.ts and lab-scenarios.esm.test.ts, so both module systems run in parallel.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { expect, test } from 'vitest';
import { ATTR, METRICS, SERVER_RESUME_OUTCOMES, SPAN_EVENT } from '../../src/shared/names';
import { sample } from '../support/lab';
import {
  type ServerLabReport,
  type ServerReport,
  clientResumeSpans,
  outcomeOf,
  runLab,
  serverResumeSpans,
  serverView,
} from './lab-support';

const resumes = METRICS.serverResumes.prometheusName;
const gap = METRICS.serverResumeGapEvents.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const t = { transport: 'streamable_http' };

/** Resume counts by outcome; every label combination must be exported (initialised at 0). */
function outcomes(server: ServerReport): Record<string, number> {
  return Object.fromEntries(
    SERVER_RESUME_OUTCOMES.map(outcome => {
      const value = sample(server.metrics, resumes, { ...t, outcome });
      if (value === undefined) throw new Error(`${resumes}{outcome="${outcome}"} is not exported`);
      return [outcome, value];
    }),
  );
}

const only = (outcome: string, n: number) => ({
  replayed: 0,
  unknown_cursor: 0,
  ignored: 0,
  rejected: 0,
  failed: 0,
  probe_rejected: 0,
  cross_session: 0,
  completed_stream: 0,
  [outcome]: n,
});

function expectPatched(report: ServerLabReport, moduleSystem: 'cjs' | 'esm') {
  for (const server of Object.values(report.servers)) {
    expect(server.moduleSystem).toBe(moduleSystem);
    expect(server.sdkVersion).toBe('@modelcontextprotocol/sdk@1.32.2');
    expect(server.sdkPatched).toBe(true);
  }
}

export function defineLabScenarioTests(moduleSystem: 'cjs' | 'esm') {
  test('healthy: replayed, the gap is the events the client missed, one trace with the client', async () => {
    const r = await runLab('healthy', { moduleSystem });
    expectPatched(r, moduleSystem);
    expect(Object.keys(r.servers)).toEqual(['A']);
    const A = r.servers.A!;
    expect(r.lost).toEqual([]);
    expect(outcomes(A)).toEqual(only('replayed', 1));
    // The client's 'healthy' steps emit 3 events while it is disconnected, and the proxy lets half of the next chunk
    // through when it cuts: 3 are replayed, or 2 if the first one arrived whole in that half (the lost-nothing check
    // above says none was missed either way). The in-process tests check the count against the frames on the wire.
    expect(sample(A.metrics, `${gap}_count`)).toBe(1);
    const replayed = sample(A.metrics, `${gap}_sum`)!;
    expect([2, 3]).toContain(replayed);
    expect(sample(A.metrics, events, t)).toBeGreaterThanOrEqual(r.emittedByA);
    const [serverSpan] = serverResumeSpans(A);
    const [clientSpan] = clientResumeSpans(r);
    expect(serverSpan!.traceId).toBe(clientSpan!.traceId);
    expect(serverSpan!.parentSpanId).toBe(clientSpan!.spanId);
    const cursorEvent = serverSpan!.events.find(e => e.name === SPAN_EVENT.resumeCursor)!.attributes;
    const clientCursorEvent = clientSpan!.events.find(e => e.name === SPAN_EVENT.resumeCursor)!.attributes;
    expect(cursorEvent).toEqual({
      [ATTR.cursor]: r.httpLog.find(e => e.kind === 'resume')!.lastEventId,
      [ATTR.sessionHash]: clientCursorEvent[ATTR.sessionHash], // both sides hash the same way: joinable
      [ATTR.mcpProtocolVersion]: '2025-11-25',
      [ATTR.eventStore]: true,
    });
    expect(serverSpan!.events.find(e => e.name === SPAN_EVENT.replayDone)!.attributes).toEqual({
      [ATTR.serverOutcome]: 'replayed',
      [ATTR.replayedEvents]: replayed,
      [ATTR.replayStreamId]: '_GET_stream',
      [ATTR.httpStatusCode]: 200,
    });
    expect(serverSpan!.status).toBe(SpanStatusCode.UNSET);
  });

  test("silent fork: B answers 200 with the SDK's store and no log: unknown_cursor, in the trace of the client's fork", async () => {
    const r = await runLab('silent-fork', { moduleSystem });
    expectPatched(r, moduleSystem);
    expect(r.lost).toEqual([4, 5, 6]);
    expect(outcomes(r.servers.A!)).toEqual(only('replayed', 0));
    const B = r.servers.B!;
    expect(outcomes(B)).toEqual(only('unknown_cursor', 1));
    expect(sample(B.metrics, `${gap}_count`) ?? 0).toBe(0);
    const [serverSpan] = serverResumeSpans(B);
    expect(serverSpan!.status).toBe(SpanStatusCode.ERROR);
    expect(serverSpan!.events.find(e => e.name === SPAN_EVENT.replayDone)!.attributes).toMatchObject({
      [ATTR.replayedEvents]: 0,
      [ATTR.replayStreamId]: '',
    });
    // The client cannot judge the silent stream (inconclusive); its next reconnect drops the cursor (forked).
    const [attempt, dropped] = clientResumeSpans(r);
    expect(attempt!.attributes[ATTR.outcome]).toBe('inconclusive');
    expect(dropped!.attributes[ATTR.reason]).toBe('cursor_dropped');
    // The resume GET carried the trace context: the server's unknown_cursor and the client's fork share a trace.
    expect(serverSpan!.parentSpanId).toBe(attempt!.spanId);
    expect(new Set([serverSpan!.traceId, attempt!.traceId, dropped!.traceId]).size).toBe(1);
  });

  test('no event store on B: ignored, and the client sees the fork on the first frame', async () => {
    const r = await runLab('live-fork-no-store', { moduleSystem });
    expectPatched(r, moduleSystem);
    const B = r.servers.B!;
    expect(outcomes(B)).toEqual(only('ignored', 1));
    const [serverSpan] = serverResumeSpans(B);
    expect(serverSpan!.attributes[ATTR.eventStore]).toBe(false);
    expect(serverSpan!.attributes[ATTR.replayedEvents]).toBeUndefined();
    // Live events written on the fresh stream (no ids) are counted as sent.
    expect(sample(B.metrics, events, t)).toBeGreaterThan(0);
    const [clientSpan] = clientResumeSpans(r);
    expect(clientSpan!.attributes[ATTR.reason]).toBe('id_missing');
    expect(serverSpan!.traceId).toBe(clientSpan!.traceId);
  });

  test('400 from a validating store on B: rejected, once per attempt', async () => {
    const r = await runLab('rejected-400', { moduleSystem });
    const B = r.servers.B!;
    const rejectedGets = r.httpLog.filter(e => e.kind === 'resume' && e.status === 400).length;
    expect(rejectedGets).toBeGreaterThanOrEqual(2);
    expect(outcomes(B)).toEqual(only('rejected', rejectedGets));
    expect(serverResumeSpans(B).map(s => s.attributes[ATTR.httpStatusCode])).toEqual(Array(rejectedGets).fill(400));
    expect(serverResumeSpans(B).map(s => s.traceId)).toEqual(clientResumeSpans(r).map(s => s.traceId));
  });

  test('409 while the old stream is still connected to A: rejected', async () => {
    const r = await runLab('rejected-409', { moduleSystem });
    const A = r.servers.A!;
    const conflicts = r.httpLog.filter(e => e.kind === 'resume' && e.status === 409).length;
    expect(conflicts).toBeGreaterThanOrEqual(2);
    expect(outcomes(A)).toEqual(only('rejected', conflicts));
    expect(serverResumeSpans(A).map(s => s.attributes[ATTR.httpStatusCode])).toEqual(Array(conflicts).fill(409));
  });

  test("404 from B's application router: no transport sees it, so the server records nothing (the client does)", async () => {
    const r = await runLab('rejected-404', { moduleSystem });
    const B = r.servers.B!;
    expect(r.httpLog.filter(e => e.kind === 'resume').map(e => e.status)).toContain(404);
    expect(outcomes(B)).toEqual(only('replayed', 0));
    expect(serverResumeSpans(B)).toEqual([]);
    expect(
      sample(r.metrics, METRICS.clientResumes.prometheusName, { ...t, outcome: 'rejected' }),
    ).toBeGreaterThanOrEqual(2);
  });

  test("the SDK's InMemoryEventStore alone, one process, no fork: even that resume is unknown_cursor (#943, #2560)", async () => {
    const r = await runLab('sdk-store-same-process', { moduleSystem });
    expect(Object.keys(r.servers)).toEqual(['A']); // one process: every request went to A
    const A = r.servers.A!;
    const cursor = r.httpLog.find(e => e.kind === 'resume')!.lastEventId!;
    expect(cursor).toMatch(/^_GET_stream_\d+_/); // an id A itself wrote on its standalone stream
    expect(outcomes(A)).toEqual(only('unknown_cursor', 1));
    expect(r.lost).toEqual([4, 5, 6]);
    expect(serverView(r.servers).A!.outcomes).toEqual(['unknown_cursor']);
  });
}

/** The 'fresh' store decision, once: a store that vouches for a cursor it never stored. */
export function defineFreshStoreTest(moduleSystem: 'cjs' | 'esm') {
  test("a store that falls through to a fresh stream: replayed with 0 events on B; the client's fork tells the truth", async () => {
    const r = await runLab('live-fork-integer-ids', { moduleSystem });
    const B = r.servers.B!;
    expect(outcomes(B)).toEqual(only('replayed', 1));
    expect(sample(B.metrics, `${gap}_count`)).toBe(1);
    expect(sample(B.metrics, `${gap}_sum`)).toBe(0);
    const [serverSpan] = serverResumeSpans(B);
    const [clientSpan] = clientResumeSpans(r);
    expect(outcomeOf(serverSpan!)).toBe('replayed');
    expect(clientSpan!.attributes[ATTR.reason]).toBe('id_regressed');
    expect(serverSpan!.traceId).toBe(clientSpan!.traceId);
    expect(r.lost).toEqual([4, 5, 6]);
  });
}
