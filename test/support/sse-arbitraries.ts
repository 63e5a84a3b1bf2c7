/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * fast-check arbitraries for SSE bytes, shared by the frame observer's differential test
 * (test/core/sse-frame-observer.differential.test.ts) and the client fuzz test (test/hardening/client-fuzz.test.ts):
 * characters that matter to SSE, text made of them, line ends, BOM prefixes, and the bytes helpers.
 */
import fc from 'fast-check';

export const encoder = new TextEncoder();

export const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
};

export const utf8 = (arb: fc.Arbitrary<string>): fc.Arbitrary<Uint8Array> => arb.map(s => encoder.encode(s));

/** Characters that matter to SSE (field names, separators, line ends, a BOM, NUL, Unicode line breaks). */
export const SSE_SPECIAL_CHARACTERS = [
  '\u0000',
  '\uFEFF',
  ':',
  ' ',
  '\r',
  '\n',
  'id',
  'data',
  'é',
  '💥',
  '\u2028',
  '\u0085',
] as const;

export interface TextOptions {
  /** More characters beside SSE_SPECIAL_CHARACTERS. */
  specials?: readonly string[];
  /** Weight of arbitrary UTF-16 code units against ASCII's 4 and the specials' 1. */
  binaryWeight: number;
}

/** Text of up to `maxLength` units: ASCII, any code unit, and the SSE specials. */
export function sseText({ specials = [], binaryWeight }: TextOptions): (maxLength: number) => fc.Arbitrary<string> {
  const unit = fc.oneof(
    { arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }), weight: 4 },
    { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), weight: binaryWeight },
    { arbitrary: fc.constantFrom(...SSE_SPECIAL_CHARACTERS, ...specials), weight: 1 },
  );
  return maxLength => fc.string({ unit, maxLength });
}

export const lineEnd = fc.constantFrom('\n', '\r', '\r\n').map(e => encoder.encode(e));

/** Mostly ended lines; an unended one runs into the next line. */
export const ended = fc.oneof(
  { arbitrary: fc.constant(true), weight: 9 },
  { arbitrary: fc.constant(false), weight: 1 },
);

export interface PrefixOptions {
  bomWeight: number;
  /** Also a partial BOM (EF, EF BB), weight 1. */
  partialBom: boolean;
}

/** What a stream starts with: nothing (weight 6), a BOM, maybe a partial one. */
export function streamPrefix({ bomWeight, partialBom }: PrefixOptions): fc.Arbitrary<Uint8Array> {
  const none = { arbitrary: fc.constant(new Uint8Array(0)), weight: 6 };
  const bom = { arbitrary: fc.constant(Uint8Array.of(0xef, 0xbb, 0xbf)), weight: bomWeight };
  if (!partialBom) return fc.oneof(none, bom);
  return fc.oneof(none, bom, {
    arbitrary: fc.constantFrom(Uint8Array.of(0xef), Uint8Array.of(0xef, 0xbb)),
    weight: 1,
  });
}

/**
 * eventsource-parser strips a BOM by comparing the first chunk's code units with EF BB BF, so a stream whose text
 * starts with "ï»¿" loses those three characters there (a quirk; the BOM itself is removed by TextDecoder).
 */
export const hasParserBomQuirk = (bytes: Uint8Array): boolean =>
  new TextDecoder().decode(bytes).startsWith('\u00EF\u00BB\u00BF');
