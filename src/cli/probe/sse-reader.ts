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
  /** `midFrame`: part of a frame had come when the wait ended (a trickle), so silence it is not. */
  | { kind: 'timeout'; midFrame?: true }
  /** `oversized`: the stream passed one of the reader's limits (the reader stopped reading it). */
  | { kind: 'error'; error: string; oversized?: true };

/**
 * What one stream may hold in the probe's memory: the probe only exchanges small JSON-RPC messages, so a server
 * past these is refused with an error (never cut silently: a cut frame could be judged as something it is not).
 * Lines and frames count characters (UTF-16 units, at most 2 bytes each); a response counts the bytes read.
 */
export interface SseLimits {
  /** One line (of any field), as far as it has come without its line end. */
  maxLineChars: number;
  /** The data of one frame, its lines together. */
  maxFrameChars: number;
  /** Everything read from one response body. */
  maxResponseBytes: number;
  /** Frames of one response (callers keep their ids: tiny frames must not add up either). */
  maxFrames: number;
}

export const SSE_LIMITS: SseLimits = {
  maxLineChars: 1 << 20,
  maxFrameChars: 1 << 20,
  maxResponseBytes: 8 << 20,
  maxFrames: 10_000,
};

/** Why the reader gives up on a stream, after what passed the limit. */
const NO_MORE = '(the probe reads no more of a stream: a larger one is not MCP traffic it can judge)';

/** Collects `data:` lines per frame, following the SSE line rules (CR, LF or CRLF). */
class DataCollector {
  private readonly decoder = new TextDecoder();
  private pending = '';
  private lines: string[] = [];
  private frameChars = 0;
  private skipLf = false;
  /** A field line (not a comment) came since the last frame ended. */
  private fieldSeen = false;
  readonly completed: string[] = [];
  /** Why the stream passed a limit; set once, and nothing is collected after it. */
  overflow: string | undefined;

  constructor(private readonly limits: SseLimits) {}

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
    for (const line of parts) if (this.overflow === undefined) this.line(line);
    // A server that never ends a line must not grow memory without bound.
    if (this.pending.length > this.limits.maxLineChars) this.stop(`an SSE line over ${this.limits.maxLineChars}`);
  }

  private line(line: string): void {
    if (line.length > this.limits.maxLineChars) {
      this.stop(`an SSE line over ${this.limits.maxLineChars}`);
      return;
    }
    if (line === '') {
      if (this.lines.length > 0) this.completed.push(this.lines.join('\n'));
      this.lines = [];
      this.frameChars = 0;
      this.fieldSeen = false;
      return;
    }
    if (!line.startsWith(':')) this.fieldSeen = true;
    if (line === 'data' || line.startsWith('data:')) {
      const value = line.length > 5 && line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      // A frame of endless data lines, each short, must not grow memory either.
      this.frameChars += value.length + 1;
      if (this.frameChars > this.limits.maxFrameChars) {
        this.stop(`an SSE frame with over ${this.limits.maxFrameChars}`);
        return;
      }
      this.lines.push(value);
    }
  }

  /** Part of a frame has come and its end has not. */
  get midFrame(): boolean {
    return this.fieldSeen || (this.pending !== '' && !this.pending.startsWith(':'));
  }

  private stop(what: string): void {
    this.overflow ??= `${what} characters ${NO_MORE}`;
    this.pending = '';
    this.lines = [];
  }
}

export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly collector: DataCollector;
  private readonly observer: SseFrameObserver;
  private bytesRead = 0;
  private framesRead = 0;
  private oversized = false;
  private readonly frames: SseFrame[] = [];
  private ended = false;
  private failure: string | undefined;
  private reading: Promise<void> | undefined;

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly limits: SseLimits = SSE_LIMITS,
  ) {
    this.reader = body.getReader();
    this.collector = new DataCollector(limits);
    this.observer = new SseFrameObserver({
      onFrame: id => {
        const data = this.collector.completed.shift() ?? '';
        if (++this.framesRead <= limits.maxFrames) this.frames.push({ id, data });
      },
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
      if (this.failure !== undefined)
        return this.oversized
          ? { kind: 'error', error: this.failure, oversized: true }
          : { kind: 'error', error: this.failure };
      if (this.ended) return { kind: 'eof' };
      const remaining = deadline - Date.now();
      if (remaining <= 0) return this.timedOut();
      // One read in flight at a time; a read that outlives a deadline is picked up by the next call.
      this.reading ??= this.readChunk().finally(() => (this.reading = undefined));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        this.reading.then(() => false),
        new Promise<boolean>(resolve => (timer = setTimeout(() => resolve(true), remaining))),
      ]);
      clearTimeout(timer);
      // Timers run on the event loop's millisecond clock, which can be a little ahead of the wall clock the deadline
      // is on (2 of 100 reads timed out before it): the deadline is the wall clock's.
      if (timedOut && this.frames.length === 0 && Date.now() >= deadline) return this.timedOut();
    }
  }

  /** Bytes read so far. */
  get bytes(): number {
    return this.bytesRead;
  }

  private timedOut(): SseRead {
    return this.collector.midFrame ? { kind: 'timeout', midFrame: true } : { kind: 'timeout' };
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
      this.bytesRead += value.byteLength;
      if (this.bytesRead > this.limits.maxResponseBytes)
        return await this.giveUp(`a response over ${this.limits.maxResponseBytes} bytes ${NO_MORE}`);
      this.collector.push(value);
      // The frames of earlier chunks stay readable; those of this chunk go with it.
      if (this.collector.overflow !== undefined) return await this.giveUp(this.collector.overflow);
      this.observer.push(value);
      if (this.framesRead > this.limits.maxFrames)
        await this.giveUp(`a response of over ${this.limits.maxFrames} SSE frames ${NO_MORE}`);
    } catch (error) {
      this.failure = error instanceof Error ? error.message : String(error);
    }
  }

  /** Past a limit: the frames before it stay readable, then the read fails and the connection is released. */
  private async giveUp(why: string): Promise<void> {
    this.oversized = true;
    this.failure = why;
    await this.reader.cancel().catch(() => undefined);
  }
}
