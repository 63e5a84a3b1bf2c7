/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { describe, expect, test } from 'vitest';
import { MAX_EVENT_ID_BYTES, SseFrameObserver, eventIdKey, isOversizedKey } from '../../src/core';
import { byteByByte, bytesOf, observeChunks, observeText, splitAt } from './sse-helpers';

describe('frames and ids', () => {
  test('frames with ids', () => {
    const seen = observeText('id: 1\ndata: a\n\nid: 2\ndata: b\n\n');
    expect(seen.ids).toEqual(['1', '2']);
    expect(seen.observer.framesSeen).toBe(2);
  });

  test('a frame without an id line reports undefined', () => {
    expect(observeText('data: a\n\n').ids).toEqual([undefined]);
  });

  test('an explicit empty id reports the empty string', () => {
    expect(observeText('id:\ndata: a\n\n').ids).toEqual(['']);
    expect(observeText('id: \ndata: a\n\n').ids).toEqual(['']);
  });

  test('`id` without a colon is an empty id', () => {
    expect(observeText('id\ndata: a\n\n').ids).toEqual(['']);
  });

  test('ids do not carry over to the next frame', () => {
    expect(observeText('id: 1\ndata: a\n\ndata: b\n\n').ids).toEqual(['1', undefined]);
  });

  test('the last id line of a frame wins', () => {
    expect(observeText('id: 1\nid: 2\ndata: a\n\n').ids).toEqual(['2']);
    expect(observeText('data: a\nid: 3\n\n').ids).toEqual(['3']);
  });

  test('only one leading space is removed from the id', () => {
    expect(observeText('id:  x \ndata: a\n\n').ids).toEqual([' x ']);
    expect(observeText('id:x\ndata: a\n\n').ids).toEqual(['x']);
  });

  test('a colon inside the id value is kept', () => {
    expect(observeText('id: abc:000000000000000a\ndata: a\n\n').ids).toEqual(['abc:000000000000000a']);
  });

  test('the priming event of the SDK (id and an empty data line) is a frame', () => {
    expect(observeText('id: X\ndata: \n\n').ids).toEqual(['X']);
    expect(observeText('id: X\ndata\n\n').ids).toEqual(['X']);
  });

  test('`event: message` lines and other fields do not change the id', () => {
    const text = 'event: message\nid: 7\nretry: 1000\nfoo: bar\ndata: {"jsonrpc":"2.0"}\n\n';
    expect(observeText(text).ids).toEqual(['7']);
  });

  test('field names are matched exactly', () => {
    expect(observeText('ID: 1\nid : 2\nidx: 3\ndata: a\n\n').ids).toEqual([undefined]);
    expect(observeText('id: 1\nDATA: a\ndata : b\ndatum: c\n\n').ids).toEqual([]);
  });

  test('multi-line data is one frame', () => {
    expect(observeText('id: 1\ndata: a\ndata: b\ndata: c\n\n').ids).toEqual(['1']);
  });

  test('a frame with no data line is not dispatched, and its id is dropped', () => {
    const seen = observeText('id: 1\n\nid: 2\nevent: x\n\ndata: a\n\n');
    expect(seen.ids).toEqual([undefined]);
    expect(seen.observer.framesSeen).toBe(1);
  });

  test('a frame without its closing blank line is not dispatched at the end of the stream', () => {
    expect(observeText('id: 1\ndata: a\n').ids).toEqual([]);
    expect(observeText('id: 1\ndata: a').ids).toEqual([]);
  });

  test('end() discards a pending frame', () => {
    const ids: (string | undefined)[] = [];
    const observer = new SseFrameObserver({ onFrame: id => ids.push(id) });
    observer.push(bytesOf('id: 1\ndata: a\n'));
    observer.end();
    observer.push(bytesOf('\n'));
    expect(ids).toEqual([]);
  });

  test('ids containing NUL are ignored and the previous id of the frame stays', () => {
    expect(observeText('id: a\u0000b\ndata: x\n\n').ids).toEqual([undefined]);
    expect(observeText('id: 1\nid: \u0000\ndata: x\n\n').ids).toEqual(['1']);
  });

  test('unicode and binary-looking ids are decoded as UTF-8', () => {
    expect(observeText('id: 💥-ünï-中文\ndata: x\n\n').ids).toEqual(['💥-ünï-中文']);
    const raw = Uint8Array.of(...bytesOf('id: '), 0xff, 0xfe, 0x41, ...bytesOf('\ndata: x\n\n'));
    expect(observeChunks([raw]).ids).toEqual(['\uFFFD\uFFFDA']);
  });

  test('a BOM inside an id is kept: only the stream start may carry one', () => {
    expect(observeText('id: \uFEFFabc\ndata: x\n\n').ids).toEqual(['\uFEFFabc']);
  });

  test('bytesSeen counts every byte pushed', () => {
    const text = 'id: 1\ndata: a\n\n: ping\n\n';
    expect(observeText(text).observer.bytesSeen).toBe(bytesOf(text).length);
  });
});

describe('comments', () => {
  test('comments are counted and are not frames', () => {
    const seen = observeText(': keepalive\n\n:\n\n: another\ndata: x\n\n');
    expect(seen.comments).toBe(3);
    expect(seen.observer.commentsSeen).toBe(3);
    expect(seen.ids).toEqual([undefined]);
    expect(seen.observer.framesSeen).toBe(1);
  });

  test('a comment inside a frame does not end it', () => {
    expect(observeText('id: 1\n: keepalive\ndata: a\n\n').ids).toEqual(['1']);
  });

  test('onComment is optional', () => {
    const ids: (string | undefined)[] = [];
    const observer = new SseFrameObserver({ onFrame: id => ids.push(id) });
    observer.push(bytesOf(': ping\n\nid: 1\ndata: a\n\n'));
    expect(ids).toEqual(['1']);
    expect(observer.commentsSeen).toBe(1);
  });
});

describe('line endings', () => {
  const lf = 'id: 1\ndata: a\n\n: c\n\nid: 2\ndata: b\ndata: c\n\nid:\ndata: d\n\n';
  const expected = { ids: ['1', '2', ''], comments: 1 };

  test.each([
    ['LF', lf],
    ['CRLF', lf.replaceAll('\n', '\r\n')],
    ['lone CR', lf.replaceAll('\n', '\r')],
    ['mixed', 'id: 1\r\ndata: a\r\r: c\n\nid: 2\rdata: b\ndata: c\r\n\nid:\r\ndata: d\n\r'],
  ])('%s', (_name, text) => {
    const seen = observeText(text);
    expect({ ids: seen.ids, comments: seen.comments }).toEqual(expected);
  });

  test('CR and LF in separate chunks are one line end', () => {
    const seen = observeChunks([bytesOf('id: 1\r'), bytesOf('\ndata: a\r'), bytesOf('\n\r'), bytesOf('\n')]);
    expect(seen.ids).toEqual(['1']);
  });

  test('CR CR is two line ends: a blank line', () => {
    expect(observeText('id: 1\rdata: a\r\r').ids).toEqual(['1']);
  });

  test('LF CR is two line ends: a blank line', () => {
    expect(observeText('id: 1\ndata: a\n\r').ids).toEqual(['1']);
  });
});

describe('chunking', () => {
  const text = '\uFEFF: hello\r\nevent: message\nid: 💥42\ndata: {"a":1}\r\rid:\ndata\n\nid: z\ndata: é\r\n\r\n';
  const bytes = bytesOf(text);
  const expected = observeChunks([bytes]);

  test('reference result', () => {
    expect(expected.ids).toEqual(['💥42', '', 'z']);
    expect(expected.comments).toBe(1);
  });

  test('one byte per chunk', () => {
    const seen = observeChunks(byteByByte(bytes));
    expect(seen.ids).toEqual(expected.ids);
    expect(seen.comments).toBe(expected.comments);
  });

  test('split once at every byte boundary', () => {
    for (let cut = 0; cut <= bytes.length; cut++) {
      const seen = observeChunks(splitAt(bytes, [cut]));
      expect(seen.ids, `cut at ${cut}`).toEqual(expected.ids);
      expect(seen.comments, `cut at ${cut}`).toBe(expected.comments);
    }
  });

  test('split twice at every pair of byte boundaries', () => {
    for (let a = 0; a <= bytes.length; a += 1) {
      for (let b = a; b <= bytes.length; b += 3) {
        expect(observeChunks(splitAt(bytes, [a, b])).ids, `cuts at ${a},${b}`).toEqual(expected.ids);
      }
    }
  });

  test('empty chunks change nothing', () => {
    const chunks = byteByByte(bytes).flatMap(c => [new Uint8Array(0), c]);
    expect(observeChunks(chunks).ids).toEqual(expected.ids);
  });

  test('the observer does not keep references to pushed chunks', () => {
    const ids: (string | undefined)[] = [];
    const observer = new SseFrameObserver({ onFrame: id => ids.push(id) });
    const buffer = bytesOf('id: abc');
    observer.push(buffer);
    buffer.fill(0x21); // the stream reuses its buffer
    observer.push(bytesOf('\ndata: x\n\n'));
    expect(ids).toEqual(['abc']);
  });
});

describe('byte order mark', () => {
  test('a BOM at the stream start is skipped', () => {
    expect(observeText('\uFEFFid: 1\ndata: a\n\n').ids).toEqual(['1']);
  });

  test('a BOM split over chunks is skipped', () => {
    const bytes = bytesOf('\uFEFFid: 1\ndata: a\n\n');
    expect(observeChunks(byteByByte(bytes)).ids).toEqual(['1']);
  });

  test('only one BOM is skipped', () => {
    expect(observeText('\uFEFF\uFEFFid: 1\ndata: a\n\n').ids).toEqual([undefined]);
  });

  test('a BOM after the start is part of the field name', () => {
    expect(observeText('data: a\n\n\uFEFFid: 1\ndata: b\n\n').ids).toEqual([undefined, undefined]);
  });

  test('a partial BOM is part of the field name', () => {
    const partialThenId = Uint8Array.of(0xef, 0xbb, ...bytesOf('id: 1\ndata: a\n\n'));
    expect(observeChunks(byteByByte(partialThenId)).ids).toEqual([undefined]);
    const partialThenData = Uint8Array.of(0xef, ...bytesOf('data: a\n\n'));
    expect(observeChunks([partialThenData]).ids).toEqual([]);
    expect(observeChunks(byteByByte(partialThenData)).ids).toEqual([]);
  });

  test('a line holding only a partial BOM is not a blank line', () => {
    const raw = Uint8Array.of(...bytesOf('id: 5\ndata: a\n'), 0xef, 0xbb, 0x0a, ...bytesOf('\n'));
    // Mid-stream, EF BB is no BOM at all; the frame still ends at the real blank line.
    expect(observeChunks(splitAt(raw, [1, 2])).ids).toEqual(['5']);
    const start = Uint8Array.of(0xef, 0xbb, 0x0a, ...bytesOf('id: 5\ndata: a\n\n'));
    expect(observeChunks(splitAt(start, [1, 2])).ids).toEqual(['5']);
  });
});

describe('oversized ids', () => {
  const big = 'i'.repeat(1 << 20);

  test('a 1 MB id becomes the same bounded key as eventIdKey', () => {
    const seen = observeText(`id: ${big}\ndata: x\n\n`);
    expect(seen.ids).toHaveLength(1);
    const id = seen.ids[0]!;
    expect(isOversizedKey(id)).toBe(true);
    expect(id.startsWith('\u0000oversized:')).toBe(true);
    expect(id.length).toBeLessThan(40);
    expect(id).toBe(eventIdKey(big));
  });

  test('the key is the same whatever the chunking', () => {
    const bytes = bytesOf(`id: ${big}\ndata: x\n\n`);
    const cuts = Array.from({ length: 300 }, (_, k) => k * 3517);
    expect(observeChunks(splitAt(bytes, cuts)).ids).toEqual([eventIdKey(big)]);
  });

  test('ids right at the limit are kept verbatim, one byte more becomes a key', () => {
    const atLimit = 'é'.repeat(MAX_EVENT_ID_BYTES / 2);
    expect(observeText(`id: ${atLimit}\ndata: x\n\n`).ids).toEqual([atLimit]);
    const over = `${atLimit}x`;
    expect(observeText(`id: ${over}\ndata: x\n\n`).ids).toEqual([eventIdKey(over)]);
  });

  test('multi-byte oversized ids match eventIdKey', () => {
    const id = '中'.repeat(5000);
    const bytes = bytesOf(`id: ${id}\r\ndata: x\r\n\r\n`);
    expect(observeChunks(splitAt(bytes, [7, 8, 9, 4000, 9001])).ids).toEqual([eventIdKey(id)]);
  });

  test('maxIdBytes lowers the limit', () => {
    const seen = observeText('id: 123456789\ndata: x\n\n', { maxIdBytes: 4 });
    expect(isOversizedKey(seen.ids[0]!)).toBe(true);
    expect(seen.ids[0]).toMatch(/^\u0000oversized:9B:/);
  });

  test.each([Number.NaN, -1, Number.POSITIVE_INFINITY, '8' as unknown as number])(
    'an invalid maxIdBytes %j falls back to the default limit',
    maxIdBytes => {
      const long = 'L'.repeat(MAX_EVENT_ID_BYTES + 1);
      expect(observeText(`id: 4821\ndata: x\n\nid: ${long}\ndata: y\n\n`, { maxIdBytes }).ids).toEqual([
        '4821',
        eventIdKey(long),
      ]);
    },
  );

  test('maxIdBytes 0 reduces every non-empty id to a key', () => {
    const seen = observeText('id: 1\ndata: x\n\nid:\ndata: y\n\n', { maxIdBytes: 0 });
    expect(seen.ids[0]).toMatch(/^\u0000oversized:1B:/);
    expect(seen.ids[1]).toBe('');
  });

  test('an oversized id holding NUL is ignored', () => {
    expect(observeText(`id: ${big}\u0000\ndata: x\n\n`).ids).toEqual([undefined]);
  });

  test('huge data lines are skipped without being kept', () => {
    const seen = observeText(`id: 1\ndata: ${'d'.repeat(4 << 20)}\n\n`);
    expect(seen.ids).toEqual(['1']);
  });
});
