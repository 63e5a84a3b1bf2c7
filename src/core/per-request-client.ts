/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Pure decisions for the client side of protocol 2026-07-28: how a per-request response stream ended, whether a
 * frame is the terminal response, and the listen-stream gap. The SSE data scanner here keeps at most `maxFrameChars`
 * of one frame's data (bounded memory whatever the server sends).
 */

/** How a per-request exchange ended, as the client saw it. */
export type ClientExchangeOutcome = 'completed' | 'ended_early' | 'broken' | 'cancelled' | 'failed';

/** Whether an exchange's loss is one the app has to re-issue (spec: "clients MUST re-issue it"). */
export function needsReissue(outcome: ClientExchangeOutcome): boolean {
  return outcome === 'ended_early' || outcome === 'broken';
}

export type StreamEnd = 'eof' | 'error' | 'cancel';

/** The stream ended before its terminal response: cleanly (ended_early), with an error (broken), or on purpose. */
export function judgeStreamEnd(end: StreamEnd, terminalSeen: boolean, cancelledByApp: boolean): ClientExchangeOutcome {
  if (terminalSeen) return 'completed';
  if (end === 'cancel' || cancelledByApp) return 'cancelled';
  return end === 'eof' ? 'ended_early' : 'broken';
}

/** How a `subscriptions/listen` stream ended. */
export type ListenStreamOutcome = 'closed' | 'dropped' | 'cancelled';

export function judgeListenEnd(
  end: StreamEnd,
  gracefulResultSeen: boolean,
  cancelledByApp: boolean,
): ListenStreamOutcome {
  if (gracefulResultSeen) return 'closed';
  if (end === 'cancel' || cancelledByApp) return 'cancelled';
  return 'dropped';
}

/** What one SSE frame's JSON-RPC message is, for the exchange it rides on. */
export type FrameKind = 'terminal' | 'ack' | 'other';

const ACK_METHOD = 'notifications/subscriptions/acknowledged';

/**
 * Classifies a frame's data. A JSON-RPC response (a `result` or `error` and no `method`) is terminal: a 2026-07-28
 * response stream carries exactly one request's messages. `truncated` data (past the scanner's bound) is judged on
 * its head: only a notification names its method in the first bytes.
 */
export function classifyFrameData(data: string, truncated: boolean): FrameKind {
  if (truncated) {
    const head = data.slice(0, 256);
    if (head.includes(`"${ACK_METHOD}"`)) return 'ack';
    return /"method"\s*:/.test(head) && !/"(result|error)"\s*:/.test(head.split('"method"')[0] ?? '')
      ? 'other'
      : 'terminal';
  }
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return 'other';
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return 'other';
  const m = message as Record<string, unknown>;
  if (typeof m.method === 'string') return m.method === ACK_METHOD ? 'ack' : 'other';
  return 'result' in m || 'error' in m ? 'terminal' : 'other';
}

/** Incremental SSE data-frame scanner: hands each frame's data (joined lines) to `onData`. */
export class SseDataScanner {
  private readonly decoder = new TextDecoder();
  private pending = '';
  private data: string[] = [];
  private dataChars = 0;
  private truncated = false;
  private hasData = false;

  constructor(
    private readonly onData: (data: string, truncated: boolean) => void,
    private readonly maxFrameChars = 1 << 20,
  ) {}

  push(chunk: Uint8Array): void {
    this.feed(this.decoder.decode(chunk, { stream: true }));
  }

  end(): void {
    this.feed(`${this.decoder.decode()}\n\n`);
  }

  private feed(text: string): void {
    let buffer = this.pending + text;
    let start = 0;
    for (;;) {
      const lf = buffer.indexOf('\n', start);
      const cr = buffer.indexOf('\r', start);
      const eol = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (eol === -1) break;
      // A CR at the very end may be the first half of CRLF: wait for the next chunk.
      if (buffer[eol] === '\r' && eol === buffer.length - 1) break;
      this.line(buffer.slice(start, eol));
      start = eol + (buffer[eol] === '\r' && buffer[eol + 1] === '\n' ? 2 : 1);
    }
    buffer = buffer.slice(start);
    // A line that never ends is kept only up to the bound (its head is what classifies it).
    this.pending = buffer.length > this.maxFrameChars + 64 ? buffer.slice(0, this.maxFrameChars + 64) : buffer;
  }

  private line(line: string): void {
    if (line === '') {
      if (this.hasData) this.onData(this.data.join('\n'), this.truncated);
      this.data = [];
      this.dataChars = 0;
      this.truncated = false;
      this.hasData = false;
      return;
    }
    if (!line.startsWith('data')) return;
    const colon = line.indexOf(':');
    if (colon === -1 ? line !== 'data' : colon !== 4) return;
    let value = colon === -1 ? '' : line.slice(5);
    if (value.startsWith(' ')) value = value.slice(1);
    this.hasData = true;
    if (this.dataChars >= this.maxFrameChars) {
      this.truncated = true;
      return;
    }
    if (this.dataChars + value.length > this.maxFrameChars) {
      value = value.slice(0, this.maxFrameChars - this.dataChars);
      this.truncated = true;
    }
    this.data.push(value);
    this.dataChars += value.length + 1;
  }
}

/**
 * Dropped listen streams waiting for their next acknowledgement, by endpoint and filter. Bounded; the oldest drop
 * goes first. The gap runs from the drop to the next ack of a listen stream with the same key.
 */
export class ListenGaps {
  private readonly drops = new Map<string, number>();

  constructor(readonly maxEntries: number) {}

  noteDrop(key: string, at: number): void {
    this.drops.delete(key);
    this.drops.set(key, at);
    if (this.drops.size > this.maxEntries) this.drops.delete(this.drops.keys().next().value as string);
  }

  /** Milliseconds since the drop this ack ends, or undefined when no drop was pending. */
  ack(key: string, at: number): number | undefined {
    const droppedAt = this.drops.get(key);
    if (droppedAt === undefined) return undefined;
    this.drops.delete(key);
    return Math.max(0, at - droppedAt);
  }

  get size(): number {
    return this.drops.size;
  }
}
