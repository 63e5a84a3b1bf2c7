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
import { sdkShaped } from './diagnose';
import { failed, result } from './fixes';
import { type Exchange, type McpHttp, errorMessage, findResponse, parseJson, redirected, shownType } from './mcp-http';
import { isJsonRpcMessage } from './markers';
import type { ConditionResult, ResumeAttempt, StreamKind } from './report';
import { quoted } from './server-text';
import { type SseFrame, type SseRead, SseReader } from './sse-reader';

export interface ResumeTarget {
  cursor: string;
  /**
   * What must come first: the response to this request (a request stream), or, on the standalone stream, a
   * message frame (priming frames skipped), with this id when the probe knows it.
   */
  responseTo?: string | number;
  /** The id the replayed response had on its first delivery (what diagnose.ts reads the SDK example store by). */
  responseId?: string;
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
  /**
   * Call once the answer's headers are in: the next attempt may open its connection. `stalled`: no answer came
   * at all, so the attempts after this one open at once instead of each waiting out its own --timeout in turn.
   */
  opened(stalled?: boolean): void;
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
      deadline = Math.min(Date.now() + Math.max(http.timeoutMs, conflictWaitMs), http.budget.stopAt);
      continue;
    }
    if (Date.now() + backoff >= deadline) return done(exchange);
    await exchange.close();
    conflicts++;
    await http.budget.sleep(backoff);
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
  const { exchange, conflicts } = await resumeGet(http, step, target.cursor, turn, target.conflictWaitMs).catch(
    (error: unknown) => {
      turn.opened(true);
      throw error;
    },
  );
  // No answer at all (the server hangs): later attempts need not wait for theirs one by one (pipeline.ts).
  turn.opened(exchange.status === 0);
  const base = { attempt, status: exchange.status === 0 ? null : exchange.status, conflictRetries: conflicts };
  const done = (rest: AttemptVerdict): ResumeAttempt => ({ ...base, ...rest, ms: Date.now() - started });
  const early = await judgeAnswer(http, exchange);
  if (early !== undefined) return done(early);

  const reader = new SseReader(exchange.response!.body!);
  try {
    const waitStarted = Date.now();
    const deadline = http.frameDeadline();
    let read = await reader.next(deadline);
    // A standalone resume may open with a fresh priming event; what was missed follows it.
    while (target.responseTo === undefined && read.kind === 'frame' && read.frame.data.trim() === '')
      read = await reader.next(deadline);
    const waited = `${Date.now() - waitStarted} ms (${reader.comments} keep-alive comments, ${reader.bytes} bytes)`;
    // A read the deadline cut says nothing about the server.
    if (read.kind !== 'frame' && http.stopped)
      return done({
        outcome: 'inconclusive',
        detail: `the probe reached its deadline after ${waited}, before a frame`,
      });
    return done(judgeFirstRead(read, exchange.status, waited, target));
  } finally {
    await reader.cancel();
    await exchange.close();
  }
}

/** What the answer's status and type say before any frame: undefined when it is a 2xx SSE stream to read. */
async function judgeAnswer(http: McpHttp, exchange: Exchange): Promise<AttemptVerdict | undefined> {
  if (exchange.status === 0)
    return { outcome: 'failed', reason: 'no_response', detail: exchange.error ?? 'no response' };
  if (exchange.status >= 300 && exchange.status < 400) {
    await exchange.close();
    return { outcome: 'failed', reason: 'redirected', detail: redirected(exchange) };
  }
  if (exchange.status < 200 || exchange.status >= 300) {
    const message = await errorMessage(http, exchange);
    return { outcome: 'rejected', reason: `http_${exchange.status}`, detail: `answered ${exchange.status}${message}` };
  }
  if (exchange.mediaType !== 'text/event-stream' || exchange.response?.body == null) {
    await exchange.close();
    return {
      outcome: 'failed',
      reason: 'not_sse',
      detail: `answered ${exchange.status} with ${shownType(exchange)}, not an SSE stream`,
    };
  }
  return undefined;
}

type AttemptVerdict = Omit<ResumeAttempt, 'attempt' | 'status' | 'conflictRetries' | 'ms'>;

/** What the first read of a resumed stream that answered 2xx with SSE says about the resume. */
function judgeFirstRead(read: SseRead, status: number, waited: string, target: ResumeTarget): AttemptVerdict {
  if (read.kind === 'timeout' && read.midFrame) {
    // Bytes of a frame were still coming: too slow to judge, not silent.
    return {
      outcome: 'failed',
      reason: 'slow_stream',
      detail: `answered ${status} and its first frame was still arriving after ${waited}: too slow to judge`,
    };
  }
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
  const shown = shownId(id);
  // Only a JSON-RPC message is a replay: a frame the client cannot read replays nothing.
  const replayedResponse =
    target.responseTo !== undefined
      ? findResponse(parseJson(data), target.responseTo) !== undefined
      : isJsonRpcMessage(data) && (target.standaloneFirstId === undefined || target.standaloneFirstId === id);
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

/** Where a never-issued cursor is tried, and the real cursor it imitates (the SDK example store's shape or not). */
export interface BogusCheck {
  stream: StreamKind;
  realCursor: string | undefined;
  step?: string;
  turn?: Turn;
}

/** Frames of an accepted unknown cursor are read this long at most: the condition failed already, this is evidence. */
const EVIDENCE_READ_MS = 500;

/** Condition 3: a cursor that never existed must be refused with a 4xx, not served a (silent) fresh stream. */
export async function checkBogusCursor(http: McpHttp, bogus: string, check: BogusCheck): Promise<ConditionResult> {
  const { stream, turn = SOLO, step = 'bogus_cursor' } = check;
  const key = `${stream}.bogus_cursor_refused` as const;
  // send() never throws: an exchange without an answer has status 0.
  const exchange = await http.send(step, 'GET', { lastEventId: bogus });
  turn.opened(exchange.status === 0);
  const evidence = { cursor: bogus, status: exchange.status === 0 ? null : exchange.status };
  if (exchange.status === 0) return result('not_tested', `no answer: ${exchange.error}`, evidence);
  if (exchange.status >= 400 && exchange.status < 500) {
    const message = await errorMessage(http, exchange);
    return result('pass', `refused with ${exchange.status}${message}`, evidence);
  }
  if (exchange.status >= 300 && exchange.status < 400) {
    await exchange.close();
    return result('not_tested', redirected(exchange), evidence);
  }
  if (exchange.status < 200 || exchange.status >= 300) {
    const message = await errorMessage(http, exchange);
    const detail = `answered ${exchange.status}${message}, not a 4xx refusal`;
    return failed(key, 'unknown_cursor_server_error', detail, evidence);
  }
  // A 2xx fails whatever follows; what follows only says how.
  const cause = sdkShaped(check.realCursor) ? 'unknown_cursor_served_example_store' : 'unknown_cursor_served';
  const accepted = `answered ${exchange.status} to a cursor that never existed`;
  if (exchange.mediaType !== 'text/event-stream' || exchange.response?.body == null) {
    await exchange.close();
    return failed(key, cause, `${accepted} (${shownType(exchange)}) instead of refusing it`, evidence);
  }
  const reader = new SseReader(exchange.response.body);
  try {
    const readMs = Math.min(EVIDENCE_READ_MS, http.budget.owedFrameMs());
    const read = await reader.next(Math.min(Date.now() + readMs, http.budget.stopAt));
    if (read.kind === 'frame') {
      const detail = `${accepted} and served a frame (${shownId(read.frame.id)}): a fresh stream`;
      return failed(key, cause, detail, { ...evidence, firstEventId: read.frame.id ?? null });
    }
    if (read.kind === 'eof') return failed(key, cause, `${accepted}, then ended the stream`, evidence);
    if (read.kind === 'error') return failed(key, cause, `${accepted} with ${read.error}`, evidence);
    const detail = `${accepted} and kept a silent stream open (nothing on it in ${readMs} ms, ${reader.comments} keep-alive comments): a lost log would go unnoticed`;
    return failed(key, cause, detail, evidence);
  } finally {
    await reader.cancel();
    await exchange.close();
  }
}

/** A frame's id as a detail shows it: quoted (the server chose it), or `no id`. */
export function shownId(id: string | undefined): string {
  return id ? `id ${quoted(id, 120)}` : 'no id';
}
