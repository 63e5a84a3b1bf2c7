/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe's SSE reader: ids from the core observer, data from its own collector, paired frame by frame. The
 * pairing must hold for any bytes and chunking, so it is checked against eventsource-parser (the SDK's parser).
 */
import { createParser } from 'eventsource-parser';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { SSE_LIMITS, type SseFrame, type SseLimits, SseReader } from '../../src/cli/probe/sse-reader';

const encoder = new TextEncoder();

function streamOf(chunks: Uint8Array[], keepOpen = false): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      if (!keepOpen) controller.close();
    },
  });
}

async function readAll(chunks: Uint8Array[]): Promise<SseFrame[]> {
  const reader = new SseReader(streamOf(chunks));
  const frames: SseFrame[] = [];
  for (;;) {
    const read = await reader.next(Date.now() + 5000);
    if (read.kind !== 'frame') {
      expect(read.kind).toBe('eof');
      return frames;
    }
    frames.push(read.frame);
  }
}

function reference(chunks: Uint8Array[]): SseFrame[] {
  const frames: SseFrame[] = [];
  const parser = createParser({ onEvent: e => frames.push({ id: e.id, data: e.data }) });
  const decoder = new TextDecoder();
  for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
  parser.feed(decoder.decode());
  return frames;
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map(c => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let last = 0;
  for (const p of points) {
    out.push(bytes.slice(last, p));
    last = p;
  }
  out.push(bytes.slice(last));
  return out;
}

describe('SseReader', () => {
  test('pairs ids and data of an MCP priming event and response', async () => {
    const text =
      'id: s:1\ndata: \n\n: keepalive\n\nevent: message\nid: s:2\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n';
    expect(await readAll([encoder.encode(text)])).toEqual([
      { id: 's:1', data: '' },
      { id: 's:2', data: '{"jsonrpc":"2.0","id":1,"result":{}}' },
    ]);
  });

  test('a frame without an id, an explicit empty id, CRLF split between chunks, multi-line data', async () => {
    const bytes = encoder.encode('data: a\r\ndata: b\r\n\r\nid:\r\ndata: c\r\n\r\n');
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await readAll([bytes.slice(0, cut), bytes.slice(cut)])).toEqual([
        { id: undefined, data: 'a\nb' },
        { id: '', data: 'c' },
      ]);
    }
  });

  test('no frame before the deadline is a timeout; comments are counted; the stream stays readable', async () => {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: c => {
        controller = c;
      },
    });
    const reader = new SseReader(body);
    controller.enqueue(encoder.encode(': keepalive\n\n'));
    const started = Date.now();
    expect(await reader.next(Date.now() + 100)).toEqual({ kind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(reader.comments).toBe(1);
    controller.enqueue(encoder.encode('id: 7\ndata: late\n\n'));
    expect(await reader.next(Date.now() + 1000)).toEqual({ kind: 'frame', frame: { id: '7', data: 'late' } });
    controller.close();
    expect(await reader.next(Date.now() + 1000)).toEqual({ kind: 'eof' });
  });

  test('agrees with eventsource-parser on ids and data for random streams and chunkings (300 cases)', async () => {
    const value = fc.string({
      unit: fc.constantFrom('a', 'é', '💥', ':', ' ', '\u0000', '{', '"', '1'),
      maxLength: 12,
    });
    const line = fc.oneof(
      { arbitrary: fc.constant(''), weight: 4 },
      { arbitrary: value.map(v => `id: ${v}`), weight: 2 },
      {
        arbitrary: fc.constantFrom(
          'id',
          'id:',
          'data',
          'data:',
          'data: ',
          'event: message',
          'retry: 10',
          ': keepalive',
        ),
        weight: 2,
      },
      { arbitrary: value.map(v => `data:${v}`), weight: 2 },
      { arbitrary: value.map(v => `data: ${v}`), weight: 3 },
      { arbitrary: value, weight: 1 },
    );
    const ending = fc.constantFrom('\n', '\r', '\r\n');
    const body = fc
      .tuple(fc.boolean(), fc.array(fc.tuple(line, ending), { minLength: 1, maxLength: 40, size: 'medium' }))
      .map(([bom, lines]) => encoder.encode(`${bom ? '\uFEFF' : ''}${lines.map(([l, e]) => l + e).join('')}\n`));
    let frames = 0;
    await fc.assert(
      fc.asyncProperty(body, fc.array(fc.nat({ max: 2000 }), { maxLength: 12 }), async (bytes, cuts) => {
        const chunks = splitAt(bytes, cuts);
        const expected = reference(chunks);
        expect(await readAll(chunks)).toEqual(expected);
        frames += expected.length;
      }),
      { numRuns: 300 },
    );
    // The generator must actually produce frames.
    expect(frames).toBeGreaterThan(600);
  });
});

describe('SseReader limits (issue 38: a hostile stream held without bound)', () => {
  const small: SseLimits = { maxLineChars: 1000, maxFrameChars: 2000, maxResponseBytes: 100_000, maxFrames: 50 };

  /** A body that produces `chunk` for ever, counting what was pulled. */
  function endless(chunk: string, opening = ''): { body: ReadableStream<Uint8Array>; pulled: () => number } {
    const bytes = encoder.encode(chunk);
    let pulled = 0;
    let first = true;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = first ? encoder.encode(opening + chunk) : bytes;
        first = false;
        pulled += next.length;
        controller.enqueue(next);
      },
    });
    return { body, pulled: () => pulled };
  }

  test.each([
    ['endless data lines without a blank line', 'data: 0123456789\n', '', /an SSE frame with over 2000 characters/],
    ['one endless line', '0123456789', 'data: ', /an SSE line over 1000 characters/],
    ['an endless comment line', '0123456789', ': ', /an SSE line over 1000 characters/],
    ['endless tiny frames', 'data: x\n\n', '', /a response of over 50 SSE frames/],
  ])('%s: an oversized error, soon, and no more is read', async (_name, chunk, opening, message) => {
    const { body, pulled } = endless(chunk, opening);
    const reader = new SseReader(body, small);
    let read = await reader.next(Date.now() + 5000);
    let frames = 0;
    while (read.kind === 'frame') {
      frames++;
      read = await reader.next(Date.now() + 5000);
    }
    expect(read).toMatchObject({ kind: 'error', oversized: true });
    expect(read.kind === 'error' && read.error).toMatch(message);
    expect(frames).toBeLessThanOrEqual(small.maxFrames);
    // Stopped near the limit (a chunk past it at most), not at the deadline.
    expect(pulled()).toBeLessThan(small.maxResponseBytes);
    // And it stays stopped.
    expect(await reader.next(Date.now() + 100)).toMatchObject({ kind: 'error', oversized: true });
  });

  test('a response over maxResponseBytes, in frames each within the limits', async () => {
    const frame = `data: ${'y'.repeat(900)}\n\n`;
    const { body, pulled } = endless(frame);
    const reader = new SseReader(body, { ...small, maxFrames: 1_000_000 });
    let read = await reader.next(Date.now() + 5000);
    while (read.kind === 'frame') read = await reader.next(Date.now() + 5000);
    expect(read.kind === 'error' && read.error).toMatch(/a response over 100000 bytes/);
    expect(pulled()).toBeLessThan(small.maxResponseBytes + 2 * frame.length);
  });

  test('frames within the limits pass unchanged, the frames before an oversized one included', async () => {
    const big = `id: 2\ndata: ${'z'.repeat(1500)}\ndata: ${'z'.repeat(1500)}\n\n`;
    const reader = new SseReader(
      streamOf([encoder.encode(`id: 1\ndata: ${'a'.repeat(999 - 6)}\n\n`), encoder.encode(big)]),
      small,
    );
    expect(await reader.next(Date.now() + 1000)).toEqual({ kind: 'frame', frame: { id: '1', data: 'a'.repeat(993) } });
    expect(await reader.next(Date.now() + 1000)).toMatchObject({ kind: 'error', oversized: true });
  });

  test('the defaults: 1 Mi characters a line and a frame, 8 MiB and 10,000 frames a response', () => {
    expect(SSE_LIMITS).toEqual({
      maxLineChars: 1 << 20,
      maxFrameChars: 1 << 20,
      maxResponseBytes: 8 << 20,
      maxFrames: 10_000,
    });
  });
});
