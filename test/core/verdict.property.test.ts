/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decideFirstFrame } from '../../src/core';

const RUNS = { numRuns: 500 };
const MAX_INT_ID = 999_999_999_999_999;
const seq = fc.integer({ min: 0, max: MAX_INT_ID });
const never = () => false;

describe('integer ids', () => {
  test('a later first id never consumed resumes, skipping f - c - 1 events', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        fc.pre(a !== b);
        const [c, f] = a < b ? [a, b] : [b, a];
        expect(
          decideFirstFrame({ cursor: String(c), firstId: String(f), wasConsumed: never, sequenceSeenDense: true }),
        ).toEqual({
          verdict: 'resumed',
          continuityVerified: true,
          skippedEvents: f - c - 1,
          codec: 'integer',
        });
      }),
      RUNS,
    );
  });

  test('a first id at or before the cursor forks with id_regressed (or id_reused when equal)', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        const [f, c] = a <= b ? [a, b] : [b, a];
        const verdict = decideFirstFrame({ cursor: String(c), firstId: String(f), wasConsumed: never });
        expect(verdict).toMatchObject({ verdict: 'forked', reason: f === c ? 'id_reused' : 'id_regressed' });
      }),
      RUNS,
    );
  });

  test('small gaps: skipped events are exactly the gap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 50 }), (c, step) => {
        const verdict = decideFirstFrame({
          cursor: String(c),
          firstId: String(c + step),
          wasConsumed: never,
          sequenceSeenDense: true,
        });
        expect(verdict).toMatchObject({ verdict: 'resumed', skippedEvents: step - 1 });
      }),
      RUNS,
    );
  });
});

describe('consumed ids', () => {
  /** Ids of every shape, including ones that would otherwise resume. */
  const anyId = fc.oneof(seq.map(String), fc.uuid(), fc.string({ minLength: 1, maxLength: 20 }));

  test('a consumed first id always forks: id_reused, unless the codec already rules another fork', () => {
    fc.assert(
      fc.property(anyId, fc.uniqueArray(anyId, { minLength: 1, maxLength: 20 }), fc.nat(), (cursor, consumed, pick) => {
        const set = new Set(consumed);
        const firstId = consumed[pick % consumed.length]!;
        const verdict = decideFirstFrame({ cursor, firstId, wasConsumed: id => set.has(id) });
        const withoutHistory = decideFirstFrame({ cursor, firstId, wasConsumed: never });
        if (withoutHistory.verdict === 'forked') expect(verdict).toEqual(withoutHistory);
        else {
          const codec = withoutHistory.codec;
          expect(verdict).toEqual({ verdict: 'forked', reason: 'id_reused', ...(codec ? { codec } : {}) });
        }
      }),
      RUNS,
    );
  });

  test('consumed opaque ids fork with id_reused', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (cursor, firstId) => {
        fc.pre(cursor !== firstId);
        const verdict = decideFirstFrame({ cursor, firstId, wasConsumed: id => id === firstId });
        expect(verdict).toEqual({ verdict: 'forked', reason: 'id_reused' });
      }),
      RUNS,
    );
  });

  test('consumed integer ids after the cursor fork with id_reused', () => {
    fc.assert(
      fc.property(seq, fc.integer({ min: 1, max: 1_000_000 }), (c, step) => {
        fc.pre(c + step <= MAX_INT_ID);
        const firstId = String(c + step);
        const verdict = decideFirstFrame({ cursor: String(c), firstId, wasConsumed: id => id === firstId });
        expect(verdict).toEqual({ verdict: 'forked', reason: 'id_reused', codec: 'integer' });
      }),
      RUNS,
    );
  });

  test('a first id outside the consumed set is never called reused unless it repeats the cursor', () => {
    fc.assert(
      fc.property(anyId, anyId, (cursor, firstId) => {
        fc.pre(firstId !== cursor);
        const verdict = decideFirstFrame({ cursor, firstId, wasConsumed: never });
        expect(verdict.verdict === 'forked' && verdict.reason === 'id_reused').toBe(false);
      }),
      RUNS,
    );
  });
});

describe('time-only ids', () => {
  const stream = fc.uuid();
  const ms = fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 });
  const rand = fc.stringMatching(/^[0-9a-z]{8}$/);

  test('same stream always resumes, whatever the clock did', () => {
    fc.assert(
      fc.property(stream, ms, ms, rand, rand, (s, t1, t2, r1, r2) => {
        const cursor = `${s}_${t1}_${r1}`;
        const firstId = `${s}_${t2}_${r2}`;
        fc.pre(cursor !== firstId);
        const verdict = decideFirstFrame({ cursor, firstId, wasConsumed: never });
        expect(verdict).toMatchObject({ verdict: 'resumed', continuityVerified: true, codec: 'sdk' });
        expect(verdict.verdict === 'resumed' && verdict.clockRegressed === true).toBe(t2 < t1);
      }),
      RUNS,
    );
  });

  test('another stream always forks with stream_changed', () => {
    fc.assert(
      fc.property(stream, stream, ms, ms, rand, (s1, s2, t1, t2, r) => {
        fc.pre(s1 !== s2);
        const verdict = decideFirstFrame({
          cursor: `${s1}_${t1}_${r}`,
          firstId: `${s2}_${t2}_${r}`,
          wasConsumed: never,
        });
        expect(verdict).toEqual({ verdict: 'forked', reason: 'stream_changed', codec: 'sdk' });
      }),
      RUNS,
    );
  });
});

describe('hex sequences', () => {
  const hexSeq = fc.integer({ min: 0, max: 2 ** 52 - 1 });
  const hex = (n: number) => n.toString(16).padStart(16, '0');

  test('same stream: ordered by sequence, whatever the padding', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,12}$/), hexSeq, hexSeq, (s, c, f) => {
        const verdict = decideFirstFrame({
          cursor: `${s}:${hex(c)}`,
          firstId: `${s}:${f.toString(16)}`,
          wasConsumed: never,
          sequenceSeenDense: true,
        });
        if (f > c) expect(verdict).toMatchObject({ verdict: 'resumed', skippedEvents: f - c - 1 });
        else expect(verdict).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
      }),
      RUNS,
    );
  });
});
