/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The stream wrapper hands the SDK exactly the bytes and chunks it got, and holds only in fail-loud mode. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { observeStream } from '../../src/client/observer/observed-stream';

const streamOf = (chunks: Uint8Array[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });

async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

describe('observeStream', () => {
  test('passes every chunk through unchanged, in order, with its boundaries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ minLength: 1, maxLength: 64 }), { maxLength: 20 }), async chunks => {
        const frames: (string | undefined)[] = [];
        const observed = observeStream(
          streamOf(chunks),
          { onFrame: id => frames.push(id), onEnd: () => {} },
          undefined,
          e => {
            throw e;
          },
        );
        const out = await drain(observed.readable);
        expect(out.map(c => Array.from(c))).toEqual(chunks.map(c => Array.from(c)));
      }),
      { numRuns: 200 },
    );
  });

  test('reports frames before the chunk that completes them is handed on', async () => {
    const enc = new TextEncoder();
    const seen: string[] = [];
    const observed = observeStream(
      streamOf([enc.encode('id: 1\ndata: a\n'), enc.encode('\nid: 2\ndata: b\n\n')]),
      { onFrame: id => seen.push(`frame ${id}`), onEnd: () => seen.push('end') },
      undefined,
      () => {},
    );
    const reader = observed.readable.getReader();
    await reader.read();
    expect(seen).toEqual([]);
    await reader.read();
    expect(seen).toEqual(['frame 1', 'frame 2']);
    await reader.read();
    expect(seen).toEqual(['frame 1', 'frame 2', 'end']);
  });

  test('holds chunks while the gate holds, drops them when it cuts, and closes the stream', async () => {
    const enc = new TextEncoder();
    let holding = true;
    let cut = false;
    const observed = observeStream(
      streamOf([enc.encode(': keepalive\n\n'), enc.encode('id: 9\ndata: forked\n\n'), enc.encode('data: later\n\n')]),
      {
        onFrame: () => {
          holding = false;
          cut = true;
        },
        onEnd: () => {},
      },
      { holding: () => holding, cut: () => cut },
      () => {},
    );
    expect(await drain(observed.readable)).toEqual([]);
  });

  test('reports a failing body to onEnd and errors the stream the SDK reads', async () => {
    const failure = new Error('socket hang up');
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(failure);
      },
    });
    let ended: unknown;
    const observed = observeStream(source, { onFrame: () => {}, onEnd: e => (ended = e) }, undefined, () => {});
    await expect(drain(observed.readable)).rejects.toBe(failure);
    expect(ended).toBe(failure);
  });
});
