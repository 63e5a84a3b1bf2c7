/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Resume attempts: a GET with Last-Event-ID on a fresh connection, judged by its first frame.
 *
 * A resume from a real cursor must replay, as its first frame, exactly what followed the cursor on its stream.
 * The core verdict (`decideFirstFrame`) rules out the forks it knows (missing, reused, regressed ids, another
 * stream); on top, the probe knows which frame must come, so anything else, or nothing at all, is a loss.
 */
import { decideFirstFrame } from '../../core/verdict';
import { displayEventId } from '../../core/event-id';
import { type Exchange, type McpHttp, findResponse, parseJson } from './mcp-http';
import type { ConditionResult, ResumeAttempt } from './report';
import { type SseFrame, type SseRead, SseReader } from './sse-reader';

export interface ResumeTarget {
  cursor: string;
  /**
   * What must come first: the response to this request (a request stream), or, on the standalone stream, a
   * message frame (priming frames skipped), with this id when the probe knows it.
   */
  responseTo?: string | number;
  standaloneFirstId?: string;
  /** Words for the expected frame, in details ('the response that followed the cursor'). */
  expected?: string;
  /** How long 409s may be retried (default: one step time); see resumeGet. */
  conflictWaitMs?: number;
  /** Ids consumed up to and including the cursor: a replay must not start with one of them. */
  consumedUpToCursor: ReadonlySet<string>;
}

/** First wait after a 409, doubled per retry up to MAX_CONFLICT_BACKOFF_MS. */
const CONFLICT_BACKOFF_MS = 25;
const MAX_CONFLICT_BACKOFF_MS = 400;

/** How a pipelined attempt coordinates with the attempts started before it (see pipeline.ts). */
export interface Turn {
  /** Call once the answer's headers are in: the next attempt may open its connection. */
  opened(): void;
  /** Settles when every earlier attempt has finished. */
  earlier: Promise<void>;
}

const SOLO: Turn = { opened: () => undefined, earlier: Promise.resolve() };

/**
 * GET with Last-Event-ID. A 409 ("stream already has an active connection") is retried within the step's time:
 * the server may not have noticed yet that the previous attempt's connection closed; real clients retry too. When
 * the connection it conflicts with is one of the probe's own earlier attempts still waiting for a frame, it first
 * waits for those to finish (each is bounded by its own step time), then retries with a fresh step time.
 */
export async function resumeGet(
  http: McpHttp,
  step: string,
  cursor: string,
  turn: Turn = SOLO,
  conflictWaitMs = http.timeoutMs,
): Promise<{ exchange: Exchange; conflicts: number; conflictMs: number }> {
  const started = Date.now();
  let deadline = http.deadline();
  let backoff = CONFLICT_BACKOFF_MS;
  let conflicts = 0;
  let waitedForEarlier = false;
  const done = (exchange: Exchange) => ({
    exchange,
    conflicts,
    conflictMs: conflicts === 0 ? 0 : Date.now() - started,
  });
  for (;;) {
    const exchange = await http.send(step, 'GET', { lastEventId: cursor });
    if (exchange.status !== 409 || http.stopped) return done(exchange);
    if (!waitedForEarlier) {
      await exchange.close();
      conflicts++;
      waitedForEarlier = true;
      await turn.earlier;
      // A balancer may hold the probe's closed connection open until the server's next keep-alive write.
      deadline = Date.now() + Math.max(http.timeoutMs, conflictWaitMs);
      continue;
    }
    if (Date.now() + backoff >= deadline) return done(exchange);
    await exchange.close();
    conflicts++;
    await new Promise(resolve => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, MAX_CONFLICT_BACKOFF_MS);
  }
}

export async function resumeOnce(
  http: McpHttp,
  step: string,
  attempt: number,
  target: ResumeTarget,
  turn: Turn = SOLO,
): Promise<ResumeAttempt> {
  const started = Date.now();
  const { exchange, conflicts } = await resumeGet(http, step, target.cursor, turn, target.conflictWaitMs).finally(() =>
    turn.opened(),
  );
  const base = { attempt, status: exchange.status === 0 ? null : exchange.status, conflictRetries: conflicts };
  const done = (rest: AttemptVerdict): ResumeAttempt => ({
    ...base,
    ...rest,
    ms: Date.now() - started,
  });

  if (exchange.status === 0)
    return done({ outcome: 'failed', reason: 'no_response', detail: exchange.error ?? 'no response' });
  if (exchange.status < 200 || exchange.status >= 300) {
    const message = await errorMessage(http, exchange);
    return done({
      outcome: 'rejected',
      reason: `http_${exchange.status}`,
      detail: `answered ${exchange.status}${message}`,
    });
  }
  if (exchange.mediaType !== 'text/event-stream' || exchange.response?.body == null) {
    await exchange.close();
    return done({
      outcome: 'failed',
      reason: 'not_sse',
      detail: `answered ${exchange.status} with ${exchange.mediaType || 'no content type'}`,
    });
  }

  const reader = new SseReader(exchange.response.body);
  try {
    const deadline = http.deadline();
    let read = await reader.next(deadline);
    // A standalone resume may open with a fresh priming event; what was missed follows it.
    while (target.responseTo === undefined && read.kind === 'frame' && read.frame.data.trim() === '')
      read = await reader.next(deadline);
    return done(
      judgeFirstRead(read, exchange.status, `${http.timeoutMs} ms (${reader.comments} keep-alive comments)`, target),
    );
  } finally {
    await reader.cancel();
    await exchange.close();
  }
}

type AttemptVerdict = Omit<ResumeAttempt, 'attempt' | 'status' | 'conflictRetries' | 'ms'>;

/** What the first read of a resumed stream that answered 2xx with SSE says about the resume. */
function judgeFirstRead(read: SseRead, status: number, waited: string, target: ResumeTarget): AttemptVerdict {
  if (read.kind === 'timeout') {
    return {
      outcome: 'forked',
      reason: 'no_frame',
      detail: `answered ${status} but sent no frame within ${waited}: the replay is missing`,
    };
  }
  if (read.kind === 'eof') {
    return {
      outcome: 'forked',
      reason: 'eof_without_frames',
      detail: `answered ${status} and ended the stream without a frame`,
    };
  }
  if (read.kind === 'error' && read.oversized) {
    // Past the reader's limits the probe cannot see what the stream replays: no verdict on this resume.
    return { outcome: 'failed', reason: 'stream_error', detail: `answered ${status} with ${read.error}` };
  }
  if (read.kind === 'error') {
    // Servers write the replay before they answer (the SDK does), so a 200 stream that breaks before any frame
    // had no replay to give; the break itself is often the server superseding it with the probe's next resume.
    return {
      outcome: 'forked',
      reason: 'eof_without_frames',
      detail: `answered ${status} and the stream broke before any frame (${read.error})`,
    };
  }
  return judgeFirstFrame(read.frame, target);
}

function judgeFirstFrame({ id, data }: SseFrame, target: ResumeTarget): AttemptVerdict {
  const firstEventId = id === undefined || id === '' ? null : id;
  const shown = firstEventId === null ? 'no id' : `id ${displayEventId(firstEventId)}`;
  const replayedResponse =
    target.responseTo !== undefined
      ? findResponse(parseJson(data), target.responseTo) !== undefined
      : target.standaloneFirstId === undefined || target.standaloneFirstId === id;
  const verdict = decideFirstFrame({
    cursor: target.cursor,
    firstId: id,
    wasConsumed: seen => target.consumedUpToCursor.has(seen),
  });
  if (verdict.verdict === 'forked') {
    return {
      outcome: 'forked',
      reason: verdict.reason,
      firstEventId,
      replayedResponse,
      ...(verdict.codec ? { codec: verdict.codec } : {}),
      detail: `first frame (${shown}) does not continue the cursor's log: ${verdict.reason}`,
    };
  }
  if (!replayedResponse) {
    return {
      outcome: 'forked',
      reason: 'wrong_first_frame',
      firstEventId,
      replayedResponse,
      detail: `first frame (${shown}) is not ${target.expected ?? 'the response that followed the cursor'}`,
    };
  }
  return {
    outcome: 'resumed',
    firstEventId,
    replayedResponse,
    continuityVerified: verdict.continuityVerified,
    ...(verdict.codec ? { codec: verdict.codec } : {}),
    detail: `replayed ${target.responseTo !== undefined ? 'the response' : 'the first missed event'} (${shown}) as the first frame`,
  };
}

/** Condition 3: a cursor that never existed must be refused with a 4xx, not served a (silent) fresh stream. */
export async function checkBogusCursor(
  http: McpHttp,
  bogus: string,
  turn: Turn = SOLO,
  step = 'bogus_cursor',
): Promise<ConditionResult> {
  const exchange = await http.send(step, 'GET', { lastEventId: bogus }).finally(() => turn.opened());
  const evidence = { cursor: bogus, status: exchange.status === 0 ? null : exchange.status };
  if (exchange.status === 0) return { status: 'not_tested', detail: `no answer: ${exchange.error}`, evidence };
  if (exchange.status >= 400 && exchange.status < 500) {
    const message = await errorMessage(http, exchange);
    return { status: 'pass', detail: `refused with ${exchange.status}${message}`, evidence };
  }
  if (exchange.status < 200 || exchange.status >= 300) {
    const message = await errorMessage(http, exchange);
    return { status: 'fail', detail: `answered ${exchange.status}${message}, not a 4xx refusal`, evidence };
  }
  if (exchange.mediaType !== 'text/event-stream' || exchange.response?.body == null) {
    await exchange.close();
    return {
      status: 'fail',
      detail: `answered ${exchange.status} (${exchange.mediaType || 'no content type'}) instead of refusing`,
      evidence,
    };
  }
  const reader = new SseReader(exchange.response.body);
  try {
    const read = await reader.next(http.deadline());
    const accepted = `answered ${exchange.status} to a cursor that never existed`;
    if (read.kind === 'frame') {
      const id = read.frame.id ? `id ${displayEventId(read.frame.id)}` : 'no id';
      return {
        status: 'fail',
        detail: `${accepted} and served a frame (${id}): a fresh stream`,
        evidence: { ...evidence, firstEventId: read.frame.id ?? null },
      };
    }
    if (read.kind === 'eof') return { status: 'fail', detail: `${accepted}, then ended the stream`, evidence };
    if (read.kind === 'error' && read.oversized)
      return { status: 'fail', detail: `${accepted} with ${read.error}`, evidence };
    return {
      status: 'fail',
      detail: `${accepted} and kept a silent stream open (${reader.comments} keep-alive comments in ${http.timeoutMs} ms): a lost log would go unnoticed`,
      evidence,
    };
  } finally {
    await reader.cancel();
    await exchange.close();
  }
}

/** `: <JSON-RPC error message>` from an error body, or '' — read within a short bound. */
async function errorMessage(http: McpHttp, exchange: Exchange): Promise<string> {
  const read = await http.readResponse(exchange, undefined, Math.min(http.deadline(), Date.now() + 1000));
  const error = read.message?.error as { message?: unknown } | undefined;
  return typeof error?.message === 'string' ? `: ${error.message.slice(0, 200)}` : '';
}
