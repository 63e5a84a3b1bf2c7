/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `auto`'s learned `<prefix><separator><decimal>` reading (the MCP conformance suite's `event-1`, `event-2`, …):
 * a continuous resume there is `resumed` with continuity verified, and no suffix that is not a counter (a clock,
 * random digits, hex, a UUID) ever gives a fork, id_regressed or otherwise, whatever order the two ids come in.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { autoCodec, decideFirstFrame, prefixSequenceCodec } from '../../src/core';

const RUNS = { numRuns: 500 };
const never = () => false;
const verdictOf = (cursor: string, firstId: string) =>
  decideFirstFrame({ cursor, firstId, codec: autoCodec, wasConsumed: never });

/** Prefixes as servers write them: a word (or a path) and a separator. */
const prefix = fc
  .tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9_.:/-]{0,20}$/), fc.constantFrom('-', '_', '.', '/', '#', '@'))
  .map(([word, sep]) => `${word}${sep}`);

describe('the conformance suite ids', () => {
  test('cursor event-2, first frame event-3: resumed, continuity verified', () => {
    expect(prefixSequenceCodec.decode('event-2')).toEqual({ stream: 'event-', sequence: 2, learned: true });
    expect(verdictOf('event-2', 'event-3')).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      codec: 'prefix-sequence',
    });
  });

  test('any prefix, a larger counter: resumed and verified; a smaller or equal one is no evidence, never a fork', () => {
    fc.assert(
      fc.property(prefix, fc.nat(999_999_999), fc.nat(999_999_999), (p, a, b) => {
        fc.pre(a !== b);
        expect(verdictOf(`${p}${a}`, `${p}${b}`)).toEqual({
          verdict: 'resumed',
          continuityVerified: b > a,
          codec: 'prefix-sequence',
        });
      }),
      RUNS,
    );
  });

  test('another prefix, or a first id in another format: unverified, never stream_changed', () => {
    fc.assert(
      fc.property(prefix, prefix, fc.nat(1000), fc.oneof(fc.uuid(), fc.nat().map(String)), (p, q, n, other) => {
        fc.pre(p !== q);
        expect(verdictOf(`${p}${n}`, `${q}${n + 1}`)).toMatchObject({ verdict: 'resumed', continuityVerified: false });
        expect(verdictOf(`${p}${n}`, other)).toMatchObject({ verdict: 'resumed', continuityVerified: false });
      }),
      RUNS,
    );
  });
});

describe('suffixes that are not counters never fork', () => {
  test('timestamp-like suffixes (epoch seconds and milliseconds) are opaque: any two ids, either order', () => {
    const clock = fc.integer({ min: 1_000_000_000, max: 9_999_999_999_999 });
    fc.assert(
      fc.property(prefix, clock, clock, (p, a, b) => {
        fc.pre(a !== b);
        expect(prefixSequenceCodec.decode(`${p}${a}`)).toBeUndefined();
        expect(verdictOf(`${p}${a}`, `${p}${b}`).verdict).not.toBe('forked');
      }),
      RUNS,
    );
  });

  test('random decimal, zero-padded, hex and UUID suffixes: no false id_regressed, any two ids, either order', () => {
    const suffix = fc.oneof(
      fc.nat(999_999_999).map(String),
      fc.nat(99_999).map(n => String(n).padStart(8, '0')),
      fc.stringMatching(/^[0-9a-f]{4,16}$/),
      fc.uuid(),
    );
    fc.assert(
      fc.property(prefix, suffix, suffix, (p, a, b) => {
        fc.pre(a !== b);
        const v = verdictOf(`${p}${a}`, `${p}${b}`);
        expect(v.verdict, `${p}${a} -> ${p}${b}`).toBe('resumed');
        expect(v).not.toHaveProperty('reason');
      }),
      RUNS,
    );
  });

  test('the explicit counters still prove forks: integer and hex-sequence ids regress as before', () => {
    expect(verdictOf('7', '3')).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
    expect(verdictOf('stream:0a', 'stream:02')).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
    expect(verdictOf('event-7', 'event-3')).toEqual({
      verdict: 'resumed',
      continuityVerified: false,
      codec: 'prefix-sequence',
    });
  });
});
