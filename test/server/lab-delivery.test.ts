/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger in the fork lab, with forkwatch judged from the servers alone: real SDK 1.32.2 server
 * processes behind the cutting proxy, a real client, a short delivery window. Ground truth is the client's record of
 * what A emitted and what arrived (`lost`); the server signal is an `unknown_cursor`/`ignored` resume or an
 * undelivered event with a loss reason. Healthy runs, and clients that go away without a DELETE, must stay silent.
 */
import { describe, expect, test } from 'vitest';
import { METRICS, SERVER_UNDELIVERED_LOSS_REASONS, SERVER_UNDELIVERED_REASONS } from '../../src/shared/names';
import { sample } from '../support/lab';
import { type ServerLabReport, type ServerReport, runLab } from './lab-support';

const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const resumes = METRICS.serverResumes.prometheusName;
const t = { transport: 'streamable_http' };
const options = {
  moduleSystem: 'cjs' as const,
  serverInstrumentation: { deliveryWindowMs: 2000 },
  deliveryVerdicts: true,
};

function reasons(server: ServerReport): Record<string, number> {
  return Object.fromEntries(
    SERVER_UNDELIVERED_REASONS.map(reason => {
      const value = sample(server.metrics, undelivered, { ...t, reason });
      if (value === undefined) throw new Error(`${undelivered}{reason="${reason}"} is not exported`);
      return [reason, value];
    }),
  );
}
const lossEvents = (server: ServerReport) =>
  SERVER_UNDELIVERED_LOSS_REASONS.reduce((n, r) => n + reasons(server)[r]!, 0);
/** Any server loss signal in the whole deployment. */
function serverSignals(r: ServerLabReport): number {
  let n = 0;
  for (const server of Object.values(r.servers)) {
    n += lossEvents(server);
    for (const outcome of ['unknown_cursor', 'ignored']) n += sample(server.metrics, resumes, { ...t, outcome }) ?? 0;
  }
  return n;
}

describe('delivery ledger in the fork lab (servers instrumented only)', () => {
  test('healthy: the resume replays what was pending on A; no server signal', async () => {
    const r = await runLab('healthy', options);
    expect(r.lost).toEqual([]);
    expect(sample(r.servers.A!.metrics, resumes, { ...t, outcome: 'replayed' })).toBe(1);
    expect(reasons(r.servers.A!)).toEqual({ stream_moved: 0, no_listener: 0, dropped: 0, abandoned: 0, in_flight: 0 });
    expect(serverSignals(r)).toBe(0);
  });

  test('healthy, then the client goes away without a DELETE and the app expires the session: abandoned only', async () => {
    const r = await runLab('healthy', { ...options, closeSessions: true });
    expect(r.lost).toEqual([]);
    expect(serverSignals(r)).toBe(0);
    // The close ran and settled everything: nothing is left pending, and nothing was called a loss.
    expect(r.servers.A!.delivery).toEqual({ sessionsWithPending: 0, awaitingVerdict: 0 });
    expect(lossEvents(r.servers.A!)).toBe(0);
  });

  test.each([
    [
      'vouching-store-clean-cut',
      'a store on B that vouches for an unknown cursor (replayed, 0 events): A counts stream_moved',
    ],
    ['silent-fork-clean-cut', "B answers 200 with no log: unknown_cursor on B, and A's pending events stream_moved"],
    ['no-store-clean-cut', 'B has no store: ignored on B, and stream_moved on A'],
  ])('%s: %s', async name => {
    const r = await runLab(name, options);
    expect(r.lost.length).toBeGreaterThan(0);
    // The process that stored the events and never delivered them knows, while the session kept talking to it.
    expect(reasons(r.servers.A!).stream_moved).toBe(r.lost.length);
    expect(reasons(r.servers.A!).abandoned).toBe(0);
    expect(serverSignals(r)).toBeGreaterThan(0);
  });

  test('split-brain round-robin with no resume: B counts no_listener for exactly the notifications lost', async () => {
    const r = (await runLab('split-brain', options)) as ServerLabReport & {
      emittedTotal: number;
      receivedTotal: number;
    };
    expect(r.httpLog.filter(e => e.kind === 'resume')).toEqual([]);
    const lost = r.emittedTotal - r.receivedTotal;
    expect(lost).toBe(4);
    expect(reasons(r.servers.B!)).toEqual({
      stream_moved: 0,
      no_listener: lost,
      dropped: 0,
      abandoned: 0,
      in_flight: 0,
    });
    expect(lossEvents(r.servers.A!)).toBe(0);
  });

  test('a client that never opens a GET stream (a gateway answers it 405): A counts no_listener for exactly the notifications lost', async () => {
    const r = await runLab('no-get-stream', options);
    expect(r.httpLog.filter(e => e.kind === 'get').map(e => e.status)).toEqual([405]);
    expect(r.lost).toEqual([1, 2, 3]);
    expect(reasons(r.servers.A!)).toEqual({ stream_moved: 0, no_listener: 3, dropped: 0, abandoned: 0, in_flight: 0 });
  });

  test.each([
    ['live-fork-no-store', 'ignored'],
    ['live-fork-integer-ids', 'replayed'],
    ['fail-loud', 'replayed'],
  ])('%s: the cut kills a connection with events in flight; A counts them stream_moved (B: %s)', async (name, onB) => {
    // The proxy cuts mid-frame as the first lost event passes: A wrote 4, 5 and 6 into a connection that then died.
    // A cannot know which bytes arrived: it counts its writes of the last 500 ms before the drop, so the 3 events the
    // client did read may count too when they were written just before. A resume here would have settled them all.
    const r = await runLab(name, options);
    expect(r.lost).toEqual([4, 5, 6]);
    expect(reasons(r.servers.A!).stream_moved).toBeGreaterThanOrEqual(r.lost.length);
    expect(reasons(r.servers.A!).stream_moved).toBeLessThanOrEqual(r.lost.length + 3);
    expect(reasons(r.servers.A!).abandoned).toBe(0);
    expect(sample(r.servers.B!.metrics, resumes, { ...t, outcome: onB })).toBe(1);
  });
});
