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
import { type SseFrame, SseReader } from '../../src/cli/probe/sse-reader';

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
    const body = new ReadableStream<Uint8Array>({ start: c => void (controller = c) });
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
