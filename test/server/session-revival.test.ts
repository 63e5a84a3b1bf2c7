/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * src/server/stacks/sdk/session-revival.ts on its own (issue 47: it had only the lab's end-to-end runs): when a
 * transport's first request is a session it never held, when the answer accepts it, what the session then shows
 * (restored only for a replay of its own events), counted once; and which repeated GETs are a storm's empty answers.
 * The metrics go through a real ForkwatchInstrumentation; the clock is performance.now(), faked for the window.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { EMPTY_STREAM_WINDOW_MS } from '../../src/core/defaults';
import { SessionRevival } from '../../src/server/stacks/sdk/session-revival';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sampleOne } from '../support/scrape';

const REVIVED = METRICS.serverRevivedSessions.prometheusName;
const EMPTY_GETS = METRICS.serverEmptyRepeatGets.prometheusName;

let fw: Forkwatch | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await fw?.teardown();
  fw = undefined;
});

async function counts() {
  const text = await fw!.metrics();
  return {
    restored: sampleOne(text, REVIVED, { state: 'restored' }),
    empty: sampleOne(text, REVIVED, { state: 'empty' }),
    emptyGets: sampleOne(text, EMPTY_GETS, { transport: 'streamable_http' }),
  };
}

describe('revived sessions', () => {
  test('a transport whose first request carried no id initialized its session: never counted', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const revival = new SessionRevival();
    expect(revival.requestStarted(undefined)).toBe(false); // initialize
    expect(revival.requestStarted('s1')).toBe(false);
    revival.answered(200, runtime);
    revival.freshGet(runtime);
    revival.resumeConcluded('unknown_cursor', 0, runtime);
    revival.closed(runtime);
    expect(await counts()).toEqual({ restored: 0, empty: 0, emptyGets: 0 });
  });

  test('a first request with an id is a candidate until a 2xx accepts it; then the first sign decides, once', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const revival = new SessionRevival();
    expect(revival.requestStarted('s1')).toBe(true);
    // The SDK's 400 "Server not initialized" to an unhydrated transport: not accepted, still a candidate.
    revival.answered(400, runtime);
    revival.answered(undefined, runtime);
    expect(revival.requestStarted('s1')).toBe(true);
    revival.answered(200, runtime);
    expect(revival.requestStarted('s1')).toBe(false);
    expect(await counts()).toMatchObject({ restored: 0, empty: 0 });
    // A GET without a cursor: the client has nothing the hydration could restore.
    revival.freshGet(runtime);
    // Decided: nothing after counts again.
    revival.resumeConcluded('replayed', 3, runtime);
    revival.closed(runtime);
    expect(await counts()).toEqual({ restored: 0, empty: 1, emptyGets: 0 });
  });

  test('restored only for a replay of the session’s own events, kept from before the answer if it came first', async () => {
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const restored = new SessionRevival();
    restored.requestStarted('s1');
    // The resume is the candidate: the SDK answers it 200 only once the replay ran.
    restored.resumeConcluded('replayed', 2, runtime);
    expect(await counts()).toMatchObject({ restored: 0, empty: 0 });
    restored.answered(200, runtime);
    expect(await counts()).toMatchObject({ restored: 1, empty: 0 });

    // A replay of 0 events proves nothing restored: a store that vouches for any cursor replays nothing too.
    const zero = new SessionRevival();
    zero.requestStarted('s2');
    zero.answered(200, runtime);
    zero.resumeConcluded('replayed', 0, runtime);
    expect(await counts()).toMatchObject({ restored: 1, empty: 1 });

    // A failed or probing resume says nothing either way; the transport closing first is empty.
    const closed = new SessionRevival();
    closed.requestStarted('s3');
    closed.answered(202, runtime);
    closed.resumeConcluded('failed', 5, runtime);
    closed.resumeConcluded('probe_rejected', 5, runtime);
    expect(await counts()).toMatchObject({ restored: 1, empty: 1 });
    closed.closed(runtime);
    expect(await counts()).toEqual({ restored: 1, empty: 2, emptyGets: 0 });
  });
});

describe('empty repeated GETs', () => {
  test('a GET within the window of a previous one answered 200 that delivered nothing is counted; others are not', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    fw = setupForkwatch({}, []);
    const runtime = fw.instrumentation;
    const revival = new SessionRevival();
    // The first GET has no previous one.
    revival.getReceived(runtime);
    revival.getAnswered(200);
    vi.advanceTimersByTime(1000);
    // Answered 200, nothing delivered since, back within the window: the previous answer was empty.
    revival.getReceived(runtime);
    revival.getAnswered(200);
    vi.advanceTimersByTime(1000);
    revival.getReceived(runtime);
    expect((await counts()).emptyGets).toBe(2);
    // Answered 409: no stream was served, so no empty answer.
    revival.getAnswered(409);
    vi.advanceTimersByTime(1000);
    revival.getReceived(runtime);
    revival.getAnswered(200);
    // Delivered something: a live stream's reconnect, not a storm's.
    revival.delivered(1);
    vi.advanceTimersByTime(1000);
    revival.getReceived(runtime);
    revival.getAnswered(200);
    // An idle stream a balancer closed after its timeout comes back later than the window.
    vi.advanceTimersByTime(EMPTY_STREAM_WINDOW_MS);
    revival.getReceived(runtime);
    expect(await counts()).toEqual({ restored: 0, empty: 0, emptyGets: 2 });
  });
});
