/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { DEFAULT_LEDGER_LIMITS, SessionLedger, SessionRecord } from '../../src/core';

describe('SessionRecord duplicate detection', () => {
  test('the second consume of an id is a duplicate', () => {
    const record = new SessionRecord('s', 8, 0);
    expect(record.consume('1', 1)).toBe(false);
    expect(record.consume('1', 2)).toBe(true);
    expect(record.hasConsumed('1')).toBe(true);
    expect(record.hasConsumed('2')).toBe(false);
  });

  test('ids are shared by all streams of a session', () => {
    const ledger = new SessionLedger();
    // Two streams (a POST response and the standalone GET) of session A touch the same record.
    const fromPost = ledger.touch('A', 0);
    expect(fromPost.consume('req-1_1732000000000_aaaaaaaa', 1)).toBe(false);
    const fromGet = ledger.touch('A', 2);
    expect(fromGet).toBe(fromPost);
    expect(fromGet.consume('req-1_1732000000000_aaaaaaaa', 3)).toBe(true);
  });

  test('sessions do not share ids', () => {
    const ledger = new SessionLedger();
    ledger.touch('A', 0).consume('7', 0);
    expect(ledger.touch('B', 1).hasConsumed('7')).toBe(false);
    expect(ledger.touch('B', 2).consume('7', 2)).toBe(false);
  });

  test('consume records the last id and the activity time', () => {
    const record = new SessionRecord('s', 4, 10);
    expect(record.lastActiveAt).toBe(10);
    record.consume('a', 20);
    record.consume('b', 30);
    record.consume('a', 40);
    expect(record.lastConsumedId).toBe('a');
    expect(record.lastActiveAt).toBe(40);
  });

  test('the last id is kept by its text: an id cut from a long SSE chunk reads the same', () => {
    const chunk = `id: ${'7f3c'.repeat(10)}_1796520636581_u6ge0qcr\ndata: ${'x'.repeat(1400)}\n\n`;
    const id = chunk.slice(4, chunk.indexOf('\n'));
    const record = new SessionRecord('s', 64, 0);
    record.consume(id, 1);
    expect(record.lastConsumedId).toBe(`${'7f3c'.repeat(10)}_1796520636581_u6ge0qcr`);
    record.consume('short-1', 2);
    expect(record.lastConsumedId).toBe('short-1');
  });

  test('after `recentIds` newer ids, an old id is forgotten', () => {
    const record = new SessionRecord('s', 4, 0);
    record.consume('old', 0);
    for (const id of ['n1', 'n2', 'n3']) record.consume(id, 0);
    expect(record.hasConsumed('old')).toBe(true);
    record.consume('n4', 0);
    expect(record.hasConsumed('old')).toBe(false);
    expect(['n1', 'n2', 'n3', 'n4'].every(id => record.hasConsumed(id))).toBe(true);
  });

  test('a replayed burst of duplicates does not flush the ring', () => {
    const record = new SessionRecord('s', 4, 0);
    for (const id of ['a', 'b', 'c', 'd']) record.consume(id, 0);
    for (let i = 0; i < 100; i++) expect(record.consume('d', 0)).toBe(true);
    expect(['a', 'b', 'c', 'd'].every(id => record.hasConsumed(id))).toBe(true);
  });

  test('a capacity below one still remembers the last id', () => {
    const record = new SessionRecord('s', 0, 0);
    record.consume('x', 0);
    expect(record.consume('x', 0)).toBe(true);
    record.consume('y', 0);
    expect(record.hasConsumed('x')).toBe(false);
  });

  test('property: exactly the last `capacity` distinct ids are remembered (the ring starts small and grows once)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 80 }),
        fc.array(fc.integer({ min: 0, max: 120 }), { maxLength: 300 }),
        (cap, seq) => {
          const record = new SessionRecord('s', cap, 0);
          const model: string[] = []; // distinct ids, oldest first, at most cap
          for (const n of seq) {
            const id = String(n);
            expect(record.consume(id, 0)).toBe(model.includes(id));
            if (!model.includes(id)) {
              model.push(id);
              if (model.length > cap) model.shift();
            }
          }
          for (let n = 0; n <= 120; n++) expect(record.hasConsumed(String(n))).toBe(model.includes(String(n)));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('SessionLedger limits', () => {
  test('defaults', () => {
    expect(new SessionLedger().limits).toEqual(DEFAULT_LEDGER_LIMITS);
    expect(DEFAULT_LEDGER_LIMITS).toEqual({ maxSessions: 10_000, maxIdleMs: 1_800_000, recentIds: 64 });
  });

  test.each([0, -1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number, null as unknown as number])(
    'a bad value %j falls back to the default',
    bad => {
      const ledger = new SessionLedger({ maxSessions: bad, maxIdleMs: bad, recentIds: bad });
      expect(ledger.limits).toEqual(DEFAULT_LEDGER_LIMITS);
    },
  );

  test('fractional values are floored', () => {
    expect(new SessionLedger({ maxSessions: 3.9, maxIdleMs: 1000.5, recentIds: 2.2 }).limits).toEqual({
      maxSessions: 3,
      maxIdleMs: 1000,
      recentIds: 2,
    });
  });

  test('the ring of each record uses recentIds', () => {
    const ledger = new SessionLedger({ recentIds: 2 });
    const record = ledger.touch('A', 0);
    for (const id of ['1', '2', '3']) record.consume(id, 0);
    expect(record.hasConsumed('1')).toBe(false);
    expect(record.hasConsumed('2')).toBe(true);
  });
});

describe('SessionLedger eviction', () => {
  test('over maxSessions, the least recently touched session goes first', () => {
    const ledger = new SessionLedger({ maxSessions: 2 });
    ledger.touch('A', 0);
    ledger.touch('B', 1);
    ledger.touch('A', 2); // A is now more recent than B
    ledger.touch('C', 3);
    expect(ledger.size).toBe(2);
    expect(ledger.peek('B')).toBeUndefined();
    expect(ledger.peek('A')).toBeDefined();
    expect(ledger.peek('C')).toBeDefined();
  });

  test('peek does not change recency', () => {
    const ledger = new SessionLedger({ maxSessions: 2 });
    ledger.touch('A', 0);
    ledger.touch('B', 1);
    ledger.peek('A');
    ledger.touch('C', 2);
    expect(ledger.peek('A')).toBeUndefined();
    expect(ledger.peek('B')).toBeDefined();
  });

  test('touch returns the same record and keeps what it consumed', () => {
    const ledger = new SessionLedger();
    const first = ledger.touch('A', 0);
    first.consume('42', 0);
    first.resumeAttempts = 3;
    const again = ledger.touch('A', 5);
    expect(again).toBe(first);
    expect(again.hasConsumed('42')).toBe(true);
    expect(again.resumeAttempts).toBe(3);
    expect(again.lastActiveAt).toBe(5);
  });

  test('a session idle longer than maxIdleMs is dropped on the next touch', () => {
    const ledger = new SessionLedger({ maxIdleMs: 1000 });
    ledger.touch('A', 0);
    ledger.touch('B', 500);
    ledger.touch('C', 1001); // A idle 1001 ms > 1000
    expect(ledger.peek('A')).toBeUndefined();
    expect(ledger.peek('B')).toBeDefined();
    ledger.touch('C', 1500); // B idle exactly 1000 ms: kept
    expect(ledger.peek('B')).toBeDefined();
    ledger.evict(1501);
    expect(ledger.peek('B')).toBeUndefined();
    expect(ledger.peek('C')).toBeDefined();
  });

  test('touching a session keeps it from going idle', () => {
    const ledger = new SessionLedger({ maxIdleMs: 100 });
    for (let t = 0; t <= 1000; t += 50) {
      ledger.touch('A', t);
      ledger.touch(`other-${t}`, t);
    }
    expect(ledger.peek('A')).toBeDefined();
    expect(ledger.peek('other-0')).toBeUndefined();
    expect(ledger.size).toBeLessThanOrEqual(4);
  });

  test('a session that was evicted starts again empty', () => {
    const ledger = new SessionLedger({ maxSessions: 1 });
    ledger.touch('A', 0).consume('1', 0);
    ledger.touch('B', 1);
    expect(ledger.touch('A', 2).hasConsumed('1')).toBe(false);
  });

  test('forget and clear', () => {
    const ledger = new SessionLedger();
    ledger.touch('A', 0);
    ledger.touch('B', 0);
    ledger.forget('A');
    expect(ledger.peek('A')).toBeUndefined();
    expect(ledger.size).toBe(1);
    ledger.clear();
    expect(ledger.size).toBe(0);
  });

  test('load: 10 000 sessions × 20 ids with maxSessions 1000 stays bounded', () => {
    const ledger = new SessionLedger({ maxSessions: 1000, recentIds: 16 });
    let maxSize = 0;
    for (let s = 0; s < 10_000; s++) {
      const record = ledger.touch(`session-${s}`, s);
      for (let i = 0; i < 20; i++) record.consume(`${s}:${i}`, s);
      maxSize = Math.max(maxSize, ledger.size);
    }
    expect(maxSize).toBeLessThanOrEqual(1000);
    expect(ledger.size).toBe(1000);
    // The survivors are the 1000 most recent sessions, each remembering its last 16 ids.
    expect(ledger.peek('session-8999')).toBeUndefined();
    const last = ledger.peek('session-9999')!;
    expect(last.hasConsumed('9999:19')).toBe(true);
    expect(last.hasConsumed('9999:3')).toBe(false);
  });

  test('property: size never exceeds maxSessions and the newest session always survives', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 50 })), { maxLength: 100 }),
        (max, steps) => {
          const ledger = new SessionLedger({ maxSessions: max, maxIdleMs: 40 });
          let now = 0;
          for (const [session, dt] of steps) {
            now += dt;
            ledger.touch(`s${session}`, now);
            expect(ledger.size).toBeLessThanOrEqual(max);
            expect(ledger.peek(`s${session}`)?.lastActiveAt).toBe(now);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('SessionLedger second chance', () => {
  test('keeps a session that stayed busy since it was touched and evicts an idle-since-touch one instead', () => {
    const ledger = new SessionLedger({ maxSessions: 2, maxIdleMs: 60_000, recentIds: 4 });
    const busy = ledger.touch('busy', 0);
    ledger.touch('quiet', 1);
    busy.consume('frame-1', 5); // activity after placement, without a touch
    ledger.touch('new', 10);
    expect(ledger.peek('busy')).toBeDefined();
    expect(ledger.peek('quiet')).toBeUndefined();
    expect(ledger.size).toBe(2);
  });
});
