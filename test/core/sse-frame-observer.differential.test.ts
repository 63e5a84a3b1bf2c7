/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Differential test: the observer must see the same frames and ids as eventsource-parser (the parser the MCP SDK
 * client uses) for the same bytes, whatever the lines, line endings, encodings and chunk boundaries.
 */
import { createParser } from 'eventsource-parser';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { eventIdKey } from '../../src/core';
import {
  concat,
  encoder,
  ended,
  hasParserBomQuirk,
  lineEnd,
  sseText,
  streamPrefix,
  utf8,
} from '../support/sse-arbitraries';
import { byteByByte, observeChunks, splitAt } from './sse-helpers';

/** What eventsource-parser reports for the chunks, decoded with a streaming TextDecoder as the SDK does. */
function parseWithReference(chunks: Uint8Array[]): { ids: (string | undefined)[]; comments: number } {
  const ids: (string | undefined)[] = [];
  let comments = 0;
  const parser = createParser({ onEvent: e => ids.push(e.id), onComment: () => comments++ });
  const decoder = new TextDecoder();
  for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
  parser.feed(decoder.decode());
  return { ids, comments };
}

/**
 * eventsource-parser holds back a chunk's final CR (and what follows it) until a later chunk brings a line break,
 * while the observer ends the line at once. Every generated stream therefore ends with LF, so that both have seen
 * the same complete lines when it ends. Unterminated last lines are covered by the unit tests.
 */
const terminate = (bytes: Uint8Array) => concat([bytes, Uint8Array.of(10)]);

// Characters that matter to SSE, plus ASCII and the whole Unicode range.
const text = sseText({ specials: ['  '], binaryWeight: 2 });

const line: fc.Arbitrary<Uint8Array> = fc.oneof(
  { arbitrary: fc.constant(new Uint8Array(0)), weight: 4 }, // blank line: ends a frame
  {
    arbitrary: utf8(fc.tuple(fc.constantFrom('id:', 'id: ', 'id:  ', 'id'), text(16)).map(([f, v]) => f + v)),
    weight: 4,
  },
  { arbitrary: utf8(fc.constantFrom('id', 'id:', 'id: ')), weight: 1 },
  { arbitrary: utf8(fc.tuple(fc.constantFrom('data:', 'data: ', 'data'), text(24)).map(([f, v]) => f + v)), weight: 4 },
  { arbitrary: utf8(fc.constantFrom('data', 'data:', 'data: ')), weight: 1 },
  { arbitrary: utf8(text(12).map(v => `event: ${v}`)), weight: 1 },
  { arbitrary: utf8(fc.constantFrom('event: message', 'event:', 'retry: 1000', 'retry: x')), weight: 1 },
  { arbitrary: utf8(text(12).map(v => `:${v}`)), weight: 2 }, // comments, `: keepalive` among them
  { arbitrary: utf8(text(20)), weight: 2 }, // garbage text
  { arbitrary: fc.uint8Array({ maxLength: 12 }), weight: 1 }, // raw bytes, invalid UTF-8 included
);
const prefix = streamPrefix({ bomWeight: 2, partialBom: true });

const stream = fc
  .tuple(prefix, fc.array(fc.tuple(line, lineEnd, ended), { minLength: 1, maxLength: 60, size: 'large' }))
  .map(([head, lines]) => {
    // Some lines are left without an end so that the next line continues them.
    const body = concat([head, ...lines.map(([l, end, ended]) => concat([l, ended ? end : new Uint8Array(0)]))]);
    return terminate(body);
  });
const cuts = fc.array(fc.nat({ max: 4000 }), { maxLength: 24 });

describe('SseFrameObserver agrees with eventsource-parser', () => {
  test('frame ids and comments for random byte streams and chunkings (1000 cases)', () => {
    let frames = 0;
    let withId = 0;
    fc.assert(
      fc.property(stream, cuts, (bytes, cutPoints) => {
        fc.pre(!hasParserBomQuirk(bytes));
        const chunks = splitAt(
          bytes,
          cutPoints.map(c => c % (bytes.length + 1)),
        );
        const reference = parseWithReference(chunks);
        const observed = observeChunks(chunks);
        expect(observed.ids).toEqual(reference.ids);
        expect(observed.comments).toBe(reference.comments);
        // Same answer for the stream in one piece and one byte at a time.
        expect(observeChunks([bytes]).ids).toEqual(reference.ids);
        expect(observeChunks(byteByByte(bytes)).ids).toEqual(reference.ids);
        frames += reference.ids.length;
        withId += reference.ids.filter(id => id !== undefined && id !== '').length;
      }),
      { numRuns: 1000 },
    );
    // The generator must actually exercise frames with ids.
    console.log(`differential: ${frames} frames, ${withId} with a non-empty id`);
    expect(frames).toBeGreaterThan(1000);
    expect(withId).toBeGreaterThan(300);
  });

  test('oversized ids: the observer reports eventIdKey of the id eventsource-parser sees (60 cases)', () => {
    const bigId = fc
      .tuple(fc.integer({ min: 3000, max: 9000 }), fc.constantFrom('a', 'é', '中', '💥'), fc.string({ maxLength: 8 }))
      .map(([n, ch, tail]) => ch.repeat(Math.ceil(n / encoder.encode(ch).length)) + tail.replace(/[\r\n\u0000]/g, ''));
    fc.assert(
      fc.property(fc.array(bigId, { minLength: 1, maxLength: 3 }), lineEnd, cuts, (ids, end, cutPoints) => {
        const nl = new TextDecoder().decode(end);
        const bytes = terminate(encoder.encode(ids.map(id => `id: ${id}${nl}data: x${nl}${nl}`).join('')));
        const chunks = splitAt(
          bytes,
          cutPoints.map(c => (c * 7) % (bytes.length + 1)),
        );
        const reference = parseWithReference(chunks);
        expect(reference.ids).toEqual(ids);
        expect(observeChunks(chunks).ids).toEqual(ids.map(eventIdKey));
      }),
      { numRuns: 60 },
    );
  });
});
