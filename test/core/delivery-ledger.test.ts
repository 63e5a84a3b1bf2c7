/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { DeliveryLedger, type UndeliveredReason } from '../../src/core';
import { INFLIGHT_WRITES_KEPT, probeDeliveryLedger } from '../../src/core/delivery-ledger';

const WINDOW = 1000;
const STORED = { open: false, replayable: true, standalone: false };
const STANDALONE = { open: false, replayable: true, standalone: true };
const LIVE = { open: true, replayable: true, standalone: false };
const LIVE_STANDALONE = { open: true, replayable: true, standalone: true };
const NO_STORE = { open: false, replayable: false, standalone: false };

function ledger(
  options: Partial<{
    windowMs: number;
    maxSessions: number;
    maxIdleMs: number;
    maxPendingStreams: number;
    inflightMs: number;
  }> = {},
) {
  const reports: Record<string, number> = {};
  const l = new DeliveryLedger<object>({ windowMs: WINDOW, ...options }, (_key, reason, events) => {
    reports[reason] = (reports[reason] ?? 0) + events;
  });
  return { l, reports };
}

describe('DeliveryLedger', () => {
  test("a session's key holds its account for one ledger only: a second ledger (a reconfigured instrumentation) starts afresh", () => {
    const first = ledger();
    const second = ledger();
    const s = {};
    first.l.stored(s, '_GET_stream', NO_STORE, 0);
    expect(probeDeliveryLedger(first.l).pendingEvents(s)).toBe(1);
    expect(second.l.hasPendingFor(s)).toBe(false);
    second.l.closed(s, 1); // nothing of the first ledger's is judged by the second
    expect(second.reports).toEqual({});
    first.l.closed(s, 2);
    expect(first.reports).toEqual({ abandoned: 1 });
  });

  test('events written live are never pending', () => {
    const { l, reports } = ledger();
    const s = {};
    for (let i = 0; i < 5; i++) l.stored(s, 'req-1', LIVE, i);
    l.sweep(10 * WINDOW);
    l.closed(s, 10 * WINDOW);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(0);
    expect(reports).toEqual({});
  });

  test('a resume within the window that replays the events counts nothing', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.stored(s, '_GET_stream', STANDALONE, 20);
    l.activity(s, 30); // a POST meanwhile
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(2);
    l.listenerOpened(s, 500); // the resume GET
    l.replayed(s, '_GET_stream', 3); // replays one live event too
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(0);
    expect(probeDeliveryLedger(l).sessionsWithPending).toBe(0);
    l.sweep(30 + 5 * WINDOW);
    expect(reports).toEqual({});
  });

  test('the session goes on talking here and never comes back for its events: stream_moved on its first request after the window', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.stored(s, '_GET_stream', STANDALONE, 20);
    l.activity(s, 100);
    l.activity(s, 100 + WINDOW - 1);
    expect(reports).toEqual({});
    l.sweep(100 + WINDOW);
    expect(reports).toEqual({}); // overdue, but the client may have crashed after its last request
    l.activity(s, 100 + WINDOW);
    expect(reports).toEqual({ stream_moved: 2 });
    expect(probeDeliveryLedger(l).sessionsWithPending).toBe(0);
  });

  test('cut, one more request, then a crash: the events end abandoned, never a loss', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.activity(s, 20); // the last request before the process died
    l.sweep(20 + 5 * WINDOW);
    expect(reports).toEqual({});
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(1);
    l.closed(s, 20 + 5 * WINDOW); // the app expires the session
    expect(reports).toEqual({ abandoned: 1 });
  });

  test('a GET after the window is no proof of loss: a late resume may replay the events', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.activity(s, 20);
    l.listenerOpened(s, 20 + 2 * WINDOW);
    expect(reports).toEqual({});
    l.replayed(s, '_GET_stream', 1);
    l.activity(s, 20 + 3 * WINDOW);
    expect(reports).toEqual({});
  });

  test('a vouching replay that sends nothing settles nothing', () => {
    const { l, reports } = ledger();
    const s = {};
    l.stored(s, 'req-2', STORED, 0);
    l.activity(s, 1);
    l.replayed(s, 'req-2', 0);
    l.activity(s, 1 + WINDOW);
    expect(reports).toEqual({ stream_moved: 1 });
  });

  test('standalone events of a session that never opened a GET here: no_listener', () => {
    const { l, reports } = ledger();
    const s = {};
    l.activity(s, 0); // a tools/call POST
    l.stored(s, '_GET_stream', STANDALONE, 1);
    l.stored(s, 'req-1', LIVE, 2); // its response, written live: the client is reading here
    l.activity(s, 2 + WINDOW); // the next tools/call
    expect(reports).toEqual({ no_listener: 1 });
  });

  test('no event store and nowhere to write: dropped, once the session shows activity', () => {
    const { l, reports } = ledger();
    const s = {};
    l.stored(s, '_GET_stream', { ...NO_STORE, standalone: true }, 0);
    l.activity(s, 5);
    l.activity(s, 5 + WINDOW);
    expect(reports).toEqual({ dropped: 1 });
  });

  test('a client that crashed (no activity, then close): abandoned only', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.stored(s, 'req-3', STORED, 11);
    l.sweep(100 * WINDOW);
    expect(reports).toEqual({});
    l.closed(s, 100 * WINDOW);
    expect(reports).toEqual({ abandoned: 2 });
  });

  test('a session idle for maxIdleMs is forgotten as abandoned', () => {
    const { l, reports } = ledger({ maxIdleMs: 10 * WINDOW });
    const s = {};
    l.stored(s, 'req-1', STORED, 0);
    l.sweep(10 * WINDOW - 1);
    expect(reports).toEqual({});
    l.sweep(10 * WINDOW);
    expect(reports).toEqual({ abandoned: 1 });
    expect(probeDeliveryLedger(l).sessionsWithPending).toBe(0);
  });

  test('a resume long after the window, with no activity in between, counts nothing', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.sweep(50 * WINDOW);
    l.listenerOpened(s, 50 * WINDOW); // the laptop woke up; its SDK resumes
    l.replayed(s, '_GET_stream', 1);
    l.sweep(60 * WINDOW);
    expect(reports).toEqual({});
  });

  test('a DELETE right after events went pending: abandoned, not a loss', () => {
    const { l, reports } = ledger();
    const s = {};
    l.stored(s, '_GET_stream', STANDALONE, 0);
    l.activity(s, 10); // the DELETE request
    l.closed(s, 11);
    expect(reports).toEqual({ abandoned: 1 });
  });

  test('a DELETE after the window counts the loss reason; a close with no request after it, abandoned', () => {
    const deleted = ledger();
    const s = {};
    deleted.l.listenerOpened(s, 0);
    deleted.l.stored(s, 'req-1', STORED, 1);
    deleted.l.activity(s, 2);
    deleted.l.activity(s, 2 + WINDOW); // the DELETE request
    deleted.l.closed(s, 2 + WINDOW);
    expect(deleted.reports).toEqual({ stream_moved: 1 });

    const expired = ledger();
    const t = {};
    expired.l.stored(t, 'req-1', STORED, 1);
    expired.l.activity(t, 2);
    expired.l.closed(t, 2 + WINDOW);
    expect(expired.reports).toEqual({ abandoned: 1 });
  });

  test('the session cap forgets the oldest sessions with pending events as abandoned', () => {
    const { l, reports } = ledger({ maxSessions: 2 });
    const sessions = [{}, {}, {}];
    sessions.forEach((s, i) => {
      l.stored(s, 'req-1', STORED, i);
    });
    expect(probeDeliveryLedger(l).sessionsWithPending).toBe(2);
    expect(reports).toEqual({ abandoned: 1 });
    expect(probeDeliveryLedger(l).pendingEvents(sessions[0]!)).toBe(0);
  });

  test('streams per session are capped', () => {
    const { l, reports } = ledger({ maxPendingStreams: 3 });
    const s = {};
    for (let i = 0; i < 5; i++) l.stored(s, `req-${i}`, STORED, i);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(3);
    expect(reports).toEqual({ abandoned: 2 });
  });

  test('in flight: live standalone writes just before the client dropped the connection are pending; old ones are not', () => {
    const { l, reports } = ledger({ inflightMs: 100 });
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', LIVE_STANDALONE, 10); // long delivered
    l.stored(s, '_GET_stream', LIVE_STANDALONE, 900);
    l.stored(s, '_GET_stream', LIVE_STANDALONE, 950);
    l.stored(s, 'req-1', LIVE, 960); // a request stream: not watched
    l.connectionDropped(s, '_GET_stream', 1000);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(2);
    // The client resumed elsewhere and keeps talking here: stream_moved after the window.
    l.activity(s, 1100);
    l.activity(s, 1100 + WINDOW);
    expect(reports).toEqual({ stream_moved: 2 });
  });

  test('in flight: any replay of the stream here settles them, even one that sends nothing (the client had them)', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    for (let t = 10; t < 50; t += 10) l.stored(s, '_GET_stream', LIVE_STANDALONE, t);
    l.connectionDropped(s, '_GET_stream', 60);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(4);
    l.stored(s, '_GET_stream', STANDALONE, 70); // sent while the client is away: the firmer evidence
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(1);
    l.listenerOpened(s, 300); // the resume
    l.replayed(s, '_GET_stream', 1);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(0);
    l.activity(s, 400 + 5 * WINDOW);
    expect(reports).toEqual({});
  });

  test('in flight: with events stored after the drop, only those count (a clean cut had nothing in flight)', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    for (let t = 10; t < 50; t += 10) l.stored(s, '_GET_stream', LIVE_STANDALONE, t);
    l.connectionDropped(s, '_GET_stream', 60);
    l.stored(s, '_GET_stream', STANDALONE, 70);
    l.stored(s, '_GET_stream', STANDALONE, 80);
    l.activity(s, 100);
    l.activity(s, 100 + WINDOW);
    expect(reports).toEqual({ stream_moved: 2 });
  });

  test('in flight: a crashed client (no request after the drop) ends abandoned; a drop with no recent writes adds nothing', () => {
    const { l, reports } = ledger({ inflightMs: 100 });
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', LIVE_STANDALONE, 10);
    l.connectionDropped(s, '_GET_stream', 500); // idle connection, then dropped
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(0);
    l.listenerOpened(s, 600);
    l.stored(s, '_GET_stream', LIVE_STANDALONE, 610);
    l.connectionDropped(s, '_GET_stream', 620);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(1);
    l.closed(s, 10 * WINDOW);
    expect(reports).toEqual({ abandoned: 1 });
  });

  test('in flight without an event store: in_flight (exposure) at the drop itself; never pending, never a loss', () => {
    const { l, reports } = ledger({ inflightMs: 100 });
    const s = {};
    const LIVE_NO_STORE = { open: true, replayable: false, standalone: true };
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', LIVE_NO_STORE, 10); // long delivered
    l.stored(s, '_GET_stream', LIVE_NO_STORE, 920);
    l.stored(s, '_GET_stream', LIVE_NO_STORE, 950);
    l.stored(s, 'req-1', { ...LIVE_NO_STORE, standalone: false }, 960); // a request stream: not watched
    l.connectionDropped(s, '_GET_stream', 1000);
    expect(reports).toEqual({ in_flight: 2 });
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(0);
    // Sent while the client is away: nowhere to go, the firmer evidence, judged as before.
    l.stored(s, '_GET_stream', { ...LIVE_NO_STORE, open: false }, 1010);
    l.activity(s, 1100);
    l.activity(s, 1100 + WINDOW);
    expect(reports).toEqual({ in_flight: 2, dropped: 1 });
    // A fresh connection, quiet past inflightMs, then dropped: nothing in flight.
    l.listenerOpened(s, 3000);
    l.stored(s, '_GET_stream', LIVE_NO_STORE, 3010);
    l.connectionDropped(s, '_GET_stream', 3200);
    l.closed(s, 4000);
    expect(reports).toEqual({ in_flight: 2, dropped: 1 });
  });

  test('in flight: at most INFLIGHT_WRITES_KEPT per drop; a new connection forgets the writes of the old one', () => {
    const { l } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    for (let i = 0; i < 3 * INFLIGHT_WRITES_KEPT; i++) l.stored(s, '_GET_stream', LIVE_STANDALONE, 10 + i);
    l.listenerOpened(s, 100); // e.g. a 409'd duplicate GET, or a reconnect
    l.connectionDropped(s, '_GET_stream', 110);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(0);
    for (let i = 0; i < 3 * INFLIGHT_WRITES_KEPT; i++) l.stored(s, '_GET_stream', LIVE_STANDALONE, 200 + i);
    l.connectionDropped(s, '_GET_stream', 250);
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(INFLIGHT_WRITES_KEPT);
  });

  test('events a replay missed wait behind the reopened stream: not judged while it stays quiet, settled by the next replay', () => {
    const { l, reports } = ledger();
    const s = {};
    l.listenerOpened(s, 0);
    l.stored(s, '_GET_stream', STANDALONE, 10); // the connection is gone: pending
    l.listenerOpened(s, 100); // a resume whose replay is slow (an async store)
    l.stored(s, '_GET_stream', STANDALONE, 110); // stored while the replay ran: not in it
    l.replayed(s, '_GET_stream', 1); // the replay sent the first one and reopened the stream
    expect(probeDeliveryLedger(l).pendingEvents(s)).toBe(1);
    // The session keeps talking here for many windows while the reopened stream stays quiet: nothing is judged.
    for (let t = 200; t < 10 * WINDOW; t += WINDOW / 2) l.activity(s, t);
    expect(reports).toEqual({});
    // The proxy cuts the quiet stream; the client resumes here from its cursor, before the missed event.
    l.connectionDropped(s, '_GET_stream', 10 * WINDOW);
    l.listenerOpened(s, 10 * WINDOW + 100);
    l.replayed(s, '_GET_stream', 1);
    expect(probeDeliveryLedger(l).sessionsWithPending).toBe(0);
    l.activity(s, 20 * WINDOW);
    expect(reports).toEqual({});
  });

  test('a live write on the reopened stream, or its dropped connection, ends the wait: stream_moved once the window ends', () => {
    for (const end of ['live write', 'drop'] as const) {
      const { l, reports } = ledger();
      const s = {};
      l.listenerOpened(s, 0);
      l.stored(s, '_GET_stream', STANDALONE, 10);
      l.replayed(s, '_GET_stream', 0); // a replay that missed it
      l.activity(s, 2 * WINDOW);
      expect(reports).toEqual({});
      // A live write moves the client's cursor past it; a drop leaves it waiting for a resume that may go elsewhere.
      if (end === 'live write') l.stored(s, '_GET_stream', LIVE_STANDALONE, 3 * WINDOW);
      else l.connectionDropped(s, '_GET_stream', 3 * WINDOW);
      l.activity(s, 3 * WINDOW + 10); // the window runs from here (or from the live write)
      expect(reports, end).toEqual({});
      l.activity(s, 5 * WINDOW);
      expect(reports, end).toEqual({ stream_moved: 1 });
    }
  });

  test('a replay reports the events it sent that were not pending here (stored by another replica, or re-sent)', () => {
    const unpending: number[] = [];
    const l = new DeliveryLedger<object>(
      { windowMs: WINDOW },
      () => {},
      (_key, events) => unpending.push(events),
    );
    const s = {};
    l.listenerOpened(s, 0);
    l.replayed(s, '_GET_stream', 4); // nothing pending here: all four came from elsewhere
    l.stored(s, '_GET_stream', STANDALONE, 10);
    l.stored(s, '_GET_stream', STANDALONE, 20);
    l.replayed(s, '_GET_stream', 5); // two were pending here, three were not
    l.replayed(s, '_GET_stream', 0);
    expect(unpending).toEqual([4, 3]);
  });

  test('a reporter that throws does not break the ledger', () => {
    const l = new DeliveryLedger<object>({ windowMs: WINDOW }, () => {
      throw new Error('boom');
    });
    const s = {};
    l.stored(s, 'req-1', STORED, 0);
    l.activity(s, 1);
    expect(() => l.activity(s, 1 + WINDOW)).not.toThrow();
    expect(probeDeliveryLedger(l).sessionsWithPending).toBe(0);
  });
});

type Step =
  | { kind: 'store'; stream: number; open: boolean; replayable: boolean }
  | { kind: 'activity' }
  | { kind: 'get' }
  | { kind: 'replay'; stream: number; events: number }
  | { kind: 'sweep' }
  | { kind: 'drop' }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('store' as const), stream: fc.nat(3), open: fc.boolean(), replayable: fc.boolean() }),
  fc.record({ kind: fc.constant('activity' as const) }),
  fc.record({ kind: fc.constant('get' as const) }),
  fc.record({ kind: fc.constant('replay' as const), stream: fc.nat(3), events: fc.nat(5) }),
  fc.record({ kind: fc.constant('sweep' as const) }),
  fc.record({ kind: fc.constant('drop' as const) }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.nat(3 * WINDOW) }),
);

describe('DeliveryLedger properties', () => {
  test('every pending event is reported at most once, settled by a replay, or still pending; in-flight events add at most what drops made pending', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.boolean(), (steps, close) => {
        const reported: Partial<Record<UndeliveredReason, number>> = {};
        const l = new DeliveryLedger<object>({ windowMs: WINDOW, maxPendingStreams: 3 }, (_k, reason, n) => {
          expect(n).toBeGreaterThan(0);
          reported[reason] = (reported[reason] ?? 0) + n;
        });
        const s = {};
        let now = 0;
        let pendingStored = 0;
        let inflightAdded = 0;
        let inflightExposed = 0;
        let liveWrites: { at: number; replayable: boolean }[] = [];
        let settledByReplay = 0;
        for (const st of steps) {
          if (st.kind === 'store') {
            l.stored(
              s,
              `s${st.stream}`,
              { open: st.open, replayable: st.replayable, standalone: st.stream === 0 },
              now,
            );
            if (!st.open) pendingStored++;
            else if (st.stream === 0) liveWrites.push({ at: now, replayable: st.replayable });
          } else if (st.kind === 'activity') l.activity(s, now);
          else if (st.kind === 'get') {
            l.listenerOpened(s, now);
            liveWrites = [];
          } else if (st.kind === 'replay') {
            const before = probeDeliveryLedger(l).pendingEvents(s);
            l.replayed(s, `s${st.stream}`, st.events);
            settledByReplay += before - probeDeliveryLedger(l).pendingEvents(s);
          } else if (st.kind === 'sweep') l.sweep(now);
          else if (st.kind === 'drop') {
            // The model: the last INFLIGHT_WRITES_KEPT live standalone writes, those within inflightMs of the drop;
            // pending with a store (the last write's), reported at once as in_flight without one.
            const kept = liveWrites.slice(-INFLIGHT_WRITES_KEPT);
            const inflight = kept.filter(w => now - w.at <= l.options.inflightMs).length;
            if (kept.at(-1)?.replayable === false) inflightExposed += inflight;
            else inflightAdded += inflight;
            liveWrites = [];
            l.connectionDropped(s, 's0', now);
          } else now += st.ms;
        }
        if (close) l.closed(s, now);
        expect(reported.in_flight ?? 0).toBe(inflightExposed);
        const total = Object.values(reported).reduce((a, b) => a + (b ?? 0), 0) - inflightExposed;
        // Events stored while pending are each accounted once; in-flight ones count only where no stored event does.
        const accounted = total + settledByReplay + probeDeliveryLedger(l).pendingEvents(s);
        expect(accounted).toBeLessThanOrEqual(pendingStored + inflightAdded);
        if (inflightAdded === 0) expect(accounted).toBe(pendingStored);
        if (close) expect(probeDeliveryLedger(l).sessionsWithPending).toBe(0);
      }),
    );
  });

  test('a loss reason is only ever reported on a request (or a live write) of the session, never by a clock', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.boolean(), (steps, close) => {
        let current: Step['kind'] | 'close' = 'wait';
        const reportedDuring: string[] = [];
        const l = new DeliveryLedger<object>({ windowMs: WINDOW, maxPendingStreams: 3 }, (_k, reason) => {
          if (reason !== 'abandoned' && reason !== 'in_flight')
            reportedDuring.push(current === 'store' ? 'store' : current);
        });
        const s = {};
        let now = 0;
        for (const st of steps) {
          current = st.kind;
          if (st.kind === 'store')
            l.stored(
              s,
              `s${st.stream}`,
              { open: st.open, replayable: st.replayable, standalone: st.stream === 0 },
              now,
            );
          else if (st.kind === 'activity') l.activity(s, now);
          else if (st.kind === 'get') l.listenerOpened(s, now);
          else if (st.kind === 'replay') l.replayed(s, `s${st.stream}`, st.events);
          else if (st.kind === 'sweep') l.sweep(now);
          else if (st.kind === 'drop') l.connectionDropped(s, 's0', now);
          else now += st.ms;
        }
        current = 'close';
        if (close) l.closed(s, now + 100 * WINDOW);
        // A drop proves nothing about the client either: it never reports a loss by itself.
        for (const kind of reportedDuring) expect(['activity', 'store']).toContain(kind);
      }),
    );
  });

  test('a session with no activity after its events went pending never reports a loss reason', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), steps => {
        const losses: string[] = [];
        const l = new DeliveryLedger<object>({ windowMs: WINDOW }, (_k, reason) => {
          if (reason !== 'abandoned') losses.push(reason);
        });
        const s = {};
        let now = 0;
        for (const st of steps) {
          // Only stores (not written live), waits, sweeps and replays: the client never shows itself here.
          if (st.kind === 'store')
            l.stored(s, `s${st.stream}`, { open: false, replayable: st.replayable, standalone: false }, now);
          else if (st.kind === 'replay') l.replayed(s, `s${st.stream}`, st.events);
          else if (st.kind === 'sweep') l.sweep(now);
          else if (st.kind === 'wait') now += st.ms;
        }
        l.sweep(now + 100 * WINDOW);
        l.closed(s, now + 100 * WINDOW);
        expect(losses).toEqual([]);
      }),
    );
  });
});
