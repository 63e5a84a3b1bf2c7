/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * An open standalone GET stream as the probe reads it: frames in order, ids remembered, and the server's own
 * requests on it (roots/list, ping) answered as a client would, so a server waiting for an answer is not left
 * hanging.
 */
import type { Exchange, McpHttp } from './mcp-http';
import { parseJson } from './mcp-http';
import { type SseFrame, type SseRead, SseReader } from './sse-reader';

/** Quiet time after which a burst of events (a tool's notifications, a replay) counts as over. */
export const QUIET_MS = 150;
/** The server's requests answered per stream at most: a server that floods them gets no flood of POSTs back. */
const MAX_ANSWERS = 20;

export class StandaloneStream {
  readonly frames: SseFrame[] = [];
  /** When each frame was read (probe clock), by index into `frames`. */
  private readonly readAt: number[] = [];
  private readonly reader: SseReader;
  private readonly answers: Promise<void>[] = [];

  constructor(
    private readonly http: McpHttp,
    private readonly exchange: Exchange,
  ) {
    this.reader = new SseReader(exchange.response!.body!);
  }

  /** The last id the stream carried: the cursor a client would resume from. */
  get lastId(): string | undefined {
    for (let i = this.frames.length - 1; i >= 0; i--) if (this.frames[i]!.id) return this.frames[i]!.id;
    return undefined;
  }

  /** When the frame that carried the last id was read (probe clock). */
  get lastIdReadAt(): number | undefined {
    for (let i = this.frames.length - 1; i >= 0; i--) if (this.frames[i]!.id) return this.readAt[i];
    return undefined;
  }

  get comments(): number {
    return this.reader.comments;
  }

  get bytes(): number {
    return this.reader.bytes;
  }

  async next(deadline: number): Promise<SseRead> {
    const read = await this.reader.next(deadline);
    if (read.kind === 'frame') {
      this.frames.push(read.frame);
      this.readAt.push(Date.now());
      this.answer(read.frame);
    }
    return read;
  }

  /** The next frame that carries a message (priming frames, with empty data, are recorded and skipped). */
  async nextMessage(deadline: number): Promise<SseRead> {
    for (;;) {
      const read = await this.next(deadline);
      if (read.kind !== 'frame' || read.frame.data.trim() !== '') return read;
    }
  }

  /** Reads until the stream has been quiet for QUIET_MS (or the deadline); returns the frames read. */
  async drain(deadline: number): Promise<SseFrame[]> {
    const read: SseFrame[] = [];
    for (;;) {
      const next = await this.next(Math.min(deadline, Date.now() + QUIET_MS));
      if (next.kind !== 'frame') return read;
      read.push(next.frame);
    }
  }

  /** Drops the stream (the connection closes), after the answers to the server's requests went out. */
  async close(): Promise<void> {
    await this.reader.cancel();
    await this.exchange.close();
    await Promise.allSettled(this.answers);
  }

  private answer(frame: SseFrame): void {
    const message = parseJson(frame.data) as { id?: unknown; method?: unknown } | undefined;
    if (typeof message !== 'object' || message === null) return;
    if (typeof message.method !== 'string' || (typeof message.id !== 'string' && typeof message.id !== 'number'))
      return;
    if (this.answers.length >= MAX_ANSWERS) return;
    const reply =
      message.method === 'roots/list'
        ? { result: { roots: [] } }
        : message.method === 'ping'
          ? { result: {} }
          : { error: { code: -32601, message: 'forkwatch probe does not handle this request' } };
    this.answers.push(
      this.http
        .send(`answer_${message.method}`, 'POST', { message: { jsonrpc: '2.0', id: message.id, ...reply } })
        .then(exchange => exchange.close()),
    );
  }
}

/** Opens a GET stream (a resume when `lastEventId` is given); the stream is absent unless 2xx SSE. */
export async function openStandalone(
  http: McpHttp,
  step: string,
  exchange?: Exchange,
): Promise<{ exchange: Exchange; stream?: StandaloneStream }> {
  const answered = exchange ?? (await http.send(step, 'GET'));
  const ok = answered.status >= 200 && answered.status < 300;
  if (!ok || answered.mediaType !== 'text/event-stream' || answered.response?.body == null) {
    return { exchange: answered };
  }
  return { exchange: answered, stream: new StandaloneStream(http, answered) };
}
