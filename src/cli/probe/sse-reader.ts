/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reads an SSE response body frame by frame, with a deadline per read.
 *
 * Ids come from the core `SseFrameObserver` (the same view of ids the instrumentation has: id-less frames, empty
 * ids, NUL rules, comments). The observer keeps no data, so a small collector beside it keeps each frame's data;
 * both dispatch a frame on the same blank line, so the n-th data belongs to the n-th observed frame.
 */
import { SseFrameObserver } from '../../core/sse-frame-observer';

export interface SseFrame {
  /** undefined: no id line; '': an explicit empty id. */
  id: string | undefined;
  data: string;
}

export type SseRead =
  | { kind: 'frame'; frame: SseFrame }
  | { kind: 'eof' }
  | { kind: 'timeout' }
  | { kind: 'error'; error: string };

/** Frames above this many characters of data are cut: the probe only needs small JSON-RPC messages. */
const MAX_DATA_CHARS = 1 << 20;

/** Collects `data:` lines per frame, following the SSE line rules (CR, LF or CRLF). */
class DataCollector {
  private readonly decoder = new TextDecoder();
  private pending = '';
  private lines: string[] = [];
  private skipLf = false;
  readonly completed: string[] = [];

  push(chunk: Uint8Array): void {
    // TextDecoder drops a leading BOM itself, as the SDK's TextDecoderStream does.
    let text = this.decoder.decode(chunk, { stream: true });
    // A CR that ended the last chunk may be the first half of a CRLF.
    if (this.skipLf && text.length > 0) {
      if (text.startsWith('\n')) text = text.slice(1);
      this.skipLf = false;
    }
    if (text.endsWith('\r')) this.skipLf = true;
    const parts = (this.pending + text).split(/\r\n|\r|\n/);
    this.pending = parts.pop() ?? '';
    // A server that never ends a line must not grow memory without bound.
    if (this.pending.length > 2 * MAX_DATA_CHARS) this.pending = this.pending.slice(0, MAX_DATA_CHARS + 6);
    for (const line of parts) this.line(line);
  }

  private line(line: string): void {
    if (line === '') {
      if (this.lines.length > 0) this.completed.push(this.lines.join('\n'));
      this.lines = [];
      return;
    }
    if (line === 'data' || line.startsWith('data:')) {
      const value = line.length > 5 && line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      this.lines.push(value.length > MAX_DATA_CHARS ? value.slice(0, MAX_DATA_CHARS) : value);
    }
  }
}

export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly collector = new DataCollector();
  private readonly observer: SseFrameObserver;
  private readonly frames: SseFrame[] = [];
  private ended = false;
  private failure: string | undefined;
  private reading: Promise<void> | undefined;

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
    this.observer = new SseFrameObserver({
      onFrame: id => this.frames.push({ id, data: this.collector.completed.shift() ?? '' }),
    });
  }

  /** Comment lines (keep-alives) seen so far. */
  get comments(): number {
    return this.observer.commentsSeen;
  }

  /** The next frame, or why there is none before `deadline` (epoch ms). */
  async next(deadline: number): Promise<SseRead> {
    for (;;) {
      const frame = this.frames.shift();
      if (frame !== undefined) return { kind: 'frame', frame };
      if (this.failure !== undefined) return { kind: 'error', error: this.failure };
      if (this.ended) return { kind: 'eof' };
      const remaining = deadline - Date.now();
      if (remaining <= 0) return { kind: 'timeout' };
      // One read in flight at a time; a read that outlives a deadline is picked up by the next call.
      this.reading ??= this.readChunk().finally(() => (this.reading = undefined));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        this.reading.then(() => false),
        new Promise<boolean>(resolve => (timer = setTimeout(() => resolve(true), remaining))),
      ]);
      clearTimeout(timer);
      if (timedOut && this.frames.length === 0) return { kind: 'timeout' };
    }
  }

  /** Stops reading and releases the connection. */
  async cancel(): Promise<void> {
    this.ended = true;
    await this.reader.cancel().catch(() => undefined);
  }

  private async readChunk(): Promise<void> {
    try {
      const { value, done } = await this.reader.read();
      if (done) {
        this.ended = true;
        this.observer.end();
        return;
      }
      this.collector.push(value);
      this.observer.push(value);
    } catch (error) {
      this.failure = error instanceof Error ? error.message : String(error);
    }
  }
}
