/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Shared helpers for the SSE frame observer tests (not a test file itself). */
import { SseFrameObserver, type SseFrameObserverOptions } from '../../src/core';

export interface ObservedStream {
  /** Ids of the dispatched frames, in order (undefined = no id line, '' = explicit empty id). */
  ids: (string | undefined)[];
  comments: number;
  observer: SseFrameObserver;
}

const encoder = new TextEncoder();

export function bytesOf(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Feeds `chunks` to a fresh observer and collects what it reports. */
export function observeChunks(chunks: Iterable<Uint8Array>, options?: SseFrameObserverOptions): ObservedStream {
  const ids: (string | undefined)[] = [];
  let comments = 0;
  const observer = new SseFrameObserver(
    {
      onFrame: id => ids.push(id),
      onComment: () => {
        comments++;
      },
    },
    options,
  );
  for (const chunk of chunks) observer.push(chunk);
  observer.end();
  return { ids, comments, observer };
}

/** Feeds the whole text (UTF-8) as one chunk. */
export function observeText(text: string, options?: SseFrameObserverOptions): ObservedStream {
  return observeChunks([bytesOf(text)], options);
}

/** Splits `bytes` at the given cut points (sorted, deduplicated, clamped to the byte range). */
export function splitAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map(c => Math.max(0, Math.min(bytes.length, c))))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const p of points) {
    chunks.push(bytes.slice(start, p));
    start = p;
  }
  chunks.push(bytes.slice(start));
  return chunks;
}

/** One chunk per byte: every possible boundary is a chunk boundary. */
export function byteByByte(bytes: Uint8Array): Uint8Array[] {
  return Array.from(bytes, b => Uint8Array.of(b));
}
