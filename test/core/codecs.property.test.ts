/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  autoCodec,
  csharpCodec,
  detectCodec,
  hexSequenceCodec,
  integerCodec,
  mayReadDense,
  mcpProxyCodec,
  sdkCodec,
} from '../../src/core';

const RUNS = { numRuns: 300 };

/** Stream ids as servers make them (UUIDs, `_GET_stream`) and arbitrary ones without line breaks. */
const streamId = fc.oneof(
  fc.uuid(),
  fc.constant('_GET_stream'),
  fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter(s => !/[\r\n\u2028\u2029\u0085]/.test(s)),
  fc.stringMatching(/^[A-Za-z0-9_:-]{1,30}$/),
);
const epochMs = fc.integer({ min: 1_000_000_000, max: 999_999_999_999_999 });
const base36 = (min: number, max: number) =>
  fc.string({ minLength: min, maxLength: max, unit: fc.constantFrom(...'0123456789abcdefghijklmnopqrstuvwxyz') });

describe('encode → decode round trips', () => {
  test('sdk ids give back their stream and clock, with the sdk and the auto codec', () => {
    fc.assert(
      fc.property(streamId, epochMs, base36(1, 8), (stream, ms, rand) => {
        const id = `${stream}_${ms}_${rand}`;
        const expected = stream === '_GET_stream' ? { stream, sharedStream: true, timeMs: ms } : { stream, timeMs: ms };
        expect(sdkCodec.decode(id)).toEqual(expected);
        expect(autoCodec.decode(id)).toEqual(expected);
      }),
      RUNS,
    );
  });

  test('mcp-proxy ids give back their stream and clock, with the mcp-proxy and the auto codec', () => {
    fc.assert(
      fc.property(streamId, epochMs, base36(4, 4), base36(3, 3), (stream, ms, counter, rand) => {
        const id = `${stream}_${ms}_${counter}_${rand}`;
        const expected = stream === '_GET_stream' ? { stream, sharedStream: true, timeMs: ms } : { stream, timeMs: ms };
        expect(mcpProxyCodec.decode(id)).toEqual(expected);
        expect(autoCodec.decode(id)).toEqual(expected);
      }),
      RUNS,
    );
  });

  test('hex-sequence ids give back stream and sequence, zero-padded to 16 digits or not', () => {
    fc.assert(
      fc.property(streamId, fc.integer({ min: 0, max: 2 ** 52 - 1 }), fc.boolean(), (stream, seq, padded) => {
        const hex = seq.toString(16);
        const id = `${stream}:${padded ? hex.padStart(16, '0') : hex}`;
        expect(hexSequenceCodec.decode(id)).toEqual({ stream, sequence: seq, dense: true });
        // A stream key shaped `<base64>:<base64>` and a counter without hex letters is C#'s format (its look-alike).
        const expected = csharpCodec.decode(id) ?? { stream, sequence: seq, dense: true };
        expect(autoCodec.decode(id)).toEqual(expected);
      }),
      RUNS,
    );
  });

  test('integer ids give back their value', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999_999_999_999 }), n => {
        expect(integerCodec.decode(String(n))).toEqual({ sequence: n, dense: true });
        expect(autoCodec.decode(String(n))).toEqual({ sequence: n, dense: true });
      }),
      RUNS,
    );
  });

  test('UUIDs are opaque to every built-in codec', () => {
    fc.assert(
      fc.property(fc.uuid(), id => {
        expect(autoCodec.decode(id)).toBeUndefined();
      }),
      RUNS,
    );
  });
});

describe("mayReadDense: the density watch's shortcut past `auto`'s patterns", () => {
  /** Whether `auto` reads a dense sequence from the id: what the density watch would learn from. */
  const autoReadsDense = (id: string) => detectCodec(id)?.decode(id)?.dense === true;
  const decimal = fc.integer({ min: 0, max: 999_999_999_999_999 }).map(String);
  const base32 = fc.string({
    minLength: 26,
    maxLength: 26,
    unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'),
  });
  const base64 = fc.uint8Array({ minLength: 1, maxLength: 24 }).map(b => Buffer.from(b).toString('base64'));
  /** Every dense format's ids, the non-dense formats' ids, near misses of both, and arbitrary text. */
  const ids = fc.oneof(
    decimal,
    fc.tuple(decimal, decimal).map(([a, b]) => `${a}/${b}`),
    fc.tuple(fc.oneof(fc.constant(''), base32), decimal).map(([k, n]) => `${k}_${n}`),
    fc.tuple(base64, base64, decimal).map(([a, b, n]) => `${a}:${b}:${n}`),
    fc
      .tuple(streamId, fc.integer({ min: 0, max: 2 ** 52 }))
      .map(([k, n]) => `${k}:${n.toString(16).padStart(16, '0')}`),
    fc.tuple(streamId, epochMs, base36(1, 16)).map(([k, ms, r]) => `${k}_${ms}_${r}`),
    fc.tuple(streamId, epochMs, base36(4, 4), base36(3, 3)).map(([k, ms, c, r]) => `${k}_${ms}_${c}_${r}`),
    fc.tuple(streamId, decimal).map(([k, n]) => `${k}-${n}`),
    fc.tuple(fc.string({ maxLength: 30 }), decimal, fc.string({ maxLength: 3 })).map(([a, n, b]) => `${a}${n}${b}`),
    fc.stringMatching(/^[0-9/_:A-Z2-7a-f]{0,40}$/),
    fc.string({ maxLength: 60 }),
  );

  test('never false for an id `auto` reads as a dense sequence (so the watch learns exactly what it learned)', () => {
    fc.assert(
      fc.property(ids, id => {
        if (autoReadsDense(id)) expect(mayReadDense(id)).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  test("false for the SDK's ids and the other formats without a sequence, true for each dense format", () => {
    for (const id of [
      '9ab0a6a6-8120-4633-a62c-1dfbe3fa0ae0_1796520636581_u6ge0qcr',
      '_GET_stream_1796520636581_12345678',
      '_GET_stream_1796520636581_0001_abc',
      '550e8400-e29b-41d4-a716-446655440000_550e8400-e29b-41d4-a716-446655440001',
      'event-12',
      '',
    ]) {
      expect(autoReadsDense(id)).toBe(false);
      expect(mayReadDense(id)).toBe(false);
    }
    for (const id of [
      '0',
      '42',
      '3/7',
      '_5',
      'ABCDEFGHIJKLMNOPQRSTUVWXYZ_12',
      'c2Vzcw==:c3RyZWFt:9',
      'stream:00000000000000ff',
    ]) {
      expect(autoReadsDense(id)).toBe(true);
      expect(mayReadDense(id)).toBe(true);
    }
  });
});
