/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { autoCodec, csharpCodec, hexSequenceCodec, integerCodec, mcpProxyCodec, sdkCodec } from '../../src/core';

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
