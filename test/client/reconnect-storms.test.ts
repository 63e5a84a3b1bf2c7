/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * src/client/patches/reconnect-storms.ts on its own (issue 47: it had only the lab's end-to-end runs): which ended
 * stream is an empty answer, how each reconnect after one is counted, and the run recorded once, as long as it was,
 * when a stream delivers again. Through a real ForkwatchInstrumentation, its metrics read as Prometheus scrapes them;
 * the streams are the fields the module reads of a ResumedStream, with times set around EMPTY_STREAM_WINDOW_MS.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { ResumedStream } from '../../src/client/observer/resumed-stream';
import { endedEmpty, reconnectScheduled, reconnectSent, streakEnded } from '../../src/client/patches/reconnect-storms';
import { EMPTY_STREAM_WINDOW_MS } from '../../src/core/defaults';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sampleOne } from '../support/scrape';

const RECONNECTS = METRICS.clientEmptyReconnects.prometheusName;
const STREAK = METRICS.clientEmptyReconnectStreak.prometheusName;

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

/** A stream as the module reads it: opened at 1000 ms, ended `livedMs` later (or not), with or without an event. */
function ended(livedMs: number | undefined, { event = false, cursor = undefined as string | undefined } = {}) {
  return {
    lastId: event ? '7' : undefined,
    openedAt: 1000,
    endedAt: livedMs === undefined ? undefined : 1000 + livedMs,
    cursor,
  } as unknown as ResumedStream;
}

async function counts() {
  const text = await fw!.metrics();
  const kind = (k: string) => sampleOne(text, RECONNECTS, { transport: 'streamable_http', kind: k });
  return {
    resume: kind('resume'),
    dropped_after_empty: kind('dropped_after_empty'),
    fresh: kind('fresh'),
    // A histogram has no series before its first recording.
    runs: sampleOne(text, `${STREAK}_count`) ?? 0,
    sum: sampleOne(text, `${STREAK}_sum`) ?? 0,
  };
}

/** The SDK schedules a reconnect after `stream` and it goes out (the timer fired, the GET is sent). */
function reconnectAfter(
  streak: { emptyStreak: number },
  stream: ResumedStream,
  cursor: string | undefined,
  runtime: Forkwatch['instrumentation'],
) {
  const kind = reconnectScheduled(streak, stream, cursor, runtime);
  if (kind) reconnectSent(streak, kind, runtime);
}

describe('endedEmpty', () => {
  test('no event and ended within the window: empty; at the window, with an event or still open: not', () => {
    expect(endedEmpty(ended(0))).toBe(true);
    expect(endedEmpty(ended(EMPTY_STREAM_WINDOW_MS - 1))).toBe(true);
    // An idle stream a balancer closes after its timeout lived the window or longer: no storm.
    expect(endedEmpty(ended(EMPTY_STREAM_WINDOW_MS))).toBe(false);
    expect(endedEmpty(ended(10, { event: true }))).toBe(false);
    expect(endedEmpty(ended(undefined))).toBe(false);
  });
});

describe('reconnectScheduled, reconnectSent and streakEnded', () => {
  test('a reconnect scheduled after an empty answer and never sent (the client closed the session) counts nothing', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const streak = { emptyStreak: 0 };
    expect(reconnectScheduled(streak, ended(30), undefined, runtime)).toBe('fresh');
    expect(reconnectScheduled(streak, ended(30, { cursor: '6' }), undefined, runtime)).toBe('dropped_after_empty');
    expect(reconnectScheduled(streak, ended(30, { cursor: '6' }), '6', runtime)).toBe('resume');
    expect(reconnectScheduled(streak, ended(30, { event: true }), '7', runtime)).toBeUndefined();
    expect(streak.emptyStreak).toBe(0);
    expect(await counts()).toEqual({ resume: 0, dropped_after_empty: 0, fresh: 0, runs: 0, sum: 0 });
  });

  test('each reconnect after an empty answer is counted by the cursor it carries and the one the stream had', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const streak = { emptyStreak: 0 };
    // The resume's empty 200, and the SDK reconnects with a cursor again.
    reconnectAfter(streak, ended(50, { cursor: '6' }), '6', runtime);
    // The resume's empty 200, and the reconnect goes out without it (typescript-sdk #2499).
    reconnectAfter(streak, ended(50, { cursor: '6' }), undefined, runtime);
    // A fresh stream's empty 200, and another fresh GET.
    reconnectAfter(streak, ended(50), undefined, runtime);
    reconnectAfter(streak, ended(50), undefined, runtime);
    expect(streak.emptyStreak).toBe(4);
    expect(await counts()).toEqual({ resume: 1, dropped_after_empty: 1, fresh: 2, runs: 0, sum: 0 });
  });

  test('a run is recorded once, as long as it was, when a stream delivers; then it starts again from 0', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const streak = { emptyStreak: 0 };
    for (let i = 0; i < 3; i++) reconnectAfter(streak, ended(20), undefined, runtime);
    streakEnded(streak, runtime); // a stream of the transport delivered an event
    expect(streak.emptyStreak).toBe(0);
    expect(await counts()).toMatchObject({ fresh: 3, runs: 1, sum: 3 });
    // Delivering again with no empty reconnect in between records nothing.
    streakEnded(streak, runtime);
    expect(await counts()).toMatchObject({ runs: 1, sum: 3 });
    // A second run of 2, ended by a reconnect after a stream that delivered (the idle close of a live stream).
    reconnectAfter(streak, ended(20), undefined, runtime);
    reconnectAfter(streak, ended(20), undefined, runtime);
    reconnectAfter(streak, ended(20, { event: true, cursor: '9' }), '9', runtime);
    expect(await counts()).toEqual({ resume: 0, dropped_after_empty: 0, fresh: 5, runs: 2, sum: 5 });
    expect(sampleOne(await fw.metrics(), `${STREAK}_bucket`, { le: '2' })).toBe(1);
  });

  test('an idle stream closed after the window is no empty reconnect and ends the run', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const streak = { emptyStreak: 0 };
    reconnectAfter(streak, ended(20), undefined, runtime);
    reconnectAfter(streak, ended(EMPTY_STREAM_WINDOW_MS + 500), undefined, runtime);
    expect(streak.emptyStreak).toBe(0);
    expect(await counts()).toEqual({ resume: 0, dropped_after_empty: 0, fresh: 1, runs: 1, sum: 1 });
  });
});
