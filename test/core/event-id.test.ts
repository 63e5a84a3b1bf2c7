/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  MAX_EVENT_ID_BYTES,
  displayEventId,
  eventIdKey,
  fnv1aBytes,
  hashEventId,
  isOversizedKey,
  oversizedIdKey,
} from '../../src/core';

const utf8Length = (s: string) => new TextEncoder().encode(s).length;
const hasLoneSurrogate = (s: string) =>
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

describe('eventIdKey', () => {
  test('short ids are their own key', () => {
    for (const id of ['4821', '', 'abc:000000000000000a', '💥', 'x'.repeat(MAX_EVENT_ID_BYTES)]) {
      expect(eventIdKey(id)).toBe(id);
    }
  });

  test('the limit is in UTF-8 bytes, not characters', () => {
    const fits = 'é'.repeat(MAX_EVENT_ID_BYTES / 2); // 2 bytes each: exactly the limit
    expect(eventIdKey(fits)).toBe(fits);
    const over = `${fits}é`;
    expect(isOversizedKey(eventIdKey(over))).toBe(true);
  });

  test('one byte over the limit gives a bounded digest key', () => {
    const key = eventIdKey('x'.repeat(MAX_EVENT_ID_BYTES + 1));
    expect(key.startsWith('\u0000oversized:4097B:')).toBe(true);
    expect(key.length).toBeLessThan(40);
  });

  test('a 1 MB id gives a short key that depends on the content', () => {
    const big = 'a'.repeat(1 << 20);
    const key = eventIdKey(big);
    expect(isOversizedKey(key)).toBe(true);
    expect(key).toContain(`${1 << 20}B:`);
    expect(key.length).toBeLessThan(40);
    expect(eventIdKey(big)).toBe(key);
    expect(eventIdKey(`${big.slice(1)}b`)).not.toBe(key);
  });

  test('the key is built from the FNV-1a digest of the UTF-8 bytes', () => {
    const id = '€'.repeat(2000); // 6000 bytes
    const bytes = new TextEncoder().encode(id);
    expect(eventIdKey(id)).toBe(oversizedIdKey(bytes.length, fnv1aBytes(bytes, 0, bytes.length)));
  });

  test('no short id can be mistaken for an oversized key', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 50 }), id => {
        fc.pre(!id.includes('\u0000'));
        expect(isOversizedKey(eventIdKey(id))).toBe(false);
      }),
    );
  });

  test('property: ids up to the limit are unchanged, longer ones become keys', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1000, maxLength: 2500 }), id => {
        const key = eventIdKey(id);
        if (utf8Length(id) <= MAX_EVENT_ID_BYTES) expect(key).toBe(id);
        else expect(key).toMatch(/^\u0000oversized:\d+B:[0-9a-z]+$/);
      }),
      { numRuns: 100 },
    );
  });
});

describe('fnv1aBytes', () => {
  test('matches the FNV-1a 32-bit reference vectors', () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(fnv1aBytes(enc(''), 0, 0) >>> 0).toBe(0x811c9dc5);
    expect(fnv1aBytes(enc('a'), 0, 1) >>> 0).toBe(0xe40c292c);
    expect(fnv1aBytes(enc('foobar'), 0, 6) >>> 0).toBe(0xbf9cf968);
  });

  test('can be continued across chunks', () => {
    const bytes = new TextEncoder().encode('foobar');
    expect(fnv1aBytes(bytes, 3, 6, fnv1aBytes(bytes, 0, 3))).toBe(fnv1aBytes(bytes, 0, 6));
  });
});

describe('hashEventId', () => {
  test('is a deterministic safe integer', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), id => {
        const h = hashEventId(id);
        expect(Number.isSafeInteger(h)).toBe(true);
        expect(h).toBeGreaterThanOrEqual(0);
        expect(hashEventId(id)).toBe(h);
      }),
    );
  });

  test('distinguishes nearby ids', () => {
    const hashes = new Set<number>();
    for (let i = 0; i < 100_000; i++) hashes.add(hashEventId(String(i)));
    expect(hashes.size).toBe(100_000);
    expect(hashEventId('ab')).not.toBe(hashEventId('ba'));
    expect(hashEventId('')).not.toBe(hashEventId('\u0000'));
  });
});

describe('displayEventId', () => {
  test('undefined stays undefined; printable ids are unchanged', () => {
    expect(displayEventId(undefined)).toBeUndefined();
    expect(displayEventId('4821')).toBe('4821');
    expect(displayEventId('_GET_stream_1732000000000_ab12cd34')).toBe('_GET_stream_1732000000000_ab12cd34');
    expect(displayEventId('ünïcødé 💥')).toBe('ünïcødé 💥');
  });

  test('control characters are replaced', () => {
    expect(displayEventId('a\nb\rc\td\u0000e\u007f')).toBe('a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFD');
  });

  test('C1 control characters (such as the 8-bit CSI U+009B) are replaced too', () => {
    expect(displayEventId('a\u0080b\u009b[31mc\u009f')).toBe('a\uFFFDb\uFFFD[31mc\uFFFD');
    expect(displayEventId('\u00a0é')).toBe('\u00a0é');
  });

  test('truncation never splits a surrogate pair', () => {
    const shown = displayEventId(`${'a'.repeat(7)}💥💥`, 8)!;
    expect(shown).toBe(`${'a'.repeat(7)}…(11 chars)`);
    expect(hasLoneSurrogate(shown)).toBe(false);
  });

  test('oversized keys are shown as such, without their NUL prefix', () => {
    const shown = displayEventId(eventIdKey('x'.repeat(5000)))!;
    expect(shown).toMatch(/^<oversized id: 5000B:[0-9a-z]+>$/);
  });

  test('long ids are truncated with their length', () => {
    const shown = displayEventId('y'.repeat(1000))!;
    expect(shown).toBe(`${'y'.repeat(256)}…(1000 chars)`);
    expect(displayEventId('z'.repeat(20), 8)).toBe('zzzzzzzz…(20 chars)');
  });

  test('property: never contains control characters and stays bounded', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 600 }), fc.integer({ min: 1, max: 300 }), (id, max) => {
        const shown = displayEventId(eventIdKey(id), max)!;
        expect(/\p{Cc}/u.test(shown)).toBe(false);
        expect(hasLoneSurrogate(shown)).toBe(false);
        expect(shown.length).toBeLessThanOrEqual(Math.max(max, 64) + 20);
      }),
      { numRuns: 300 },
    );
  });
});
