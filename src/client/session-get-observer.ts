/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire-level observer's work on one session GET (fetch-observer.ts decides which): a resume attempt when the GET
 * carries a cursor, and the response body's frames observed as a patched SDK transport's are (resumed-stream.ts).
 */
import { SseFrameObserver } from '../core/sse-frame-observer';
import { withEnteredContext } from '../shared/entered-context';
import { StreamForkDetected } from '../shared/errors';
import { observeResponseBody } from '../shared/response-body';
import type { FetchLike, RequestInitLike, WebResponseLike } from '../shared/internal-types';
import { type ForkwatchRuntime, nowMs } from '../shared/runtime';
import type { SseGet } from './fetch-observer';
import { ResumeAttempt } from './resume-attempt';
import { type ForkReport, ResumedStream } from './resumed-stream';

export function observeSessionGet(
  original: FetchLike,
  self: unknown,
  input: unknown,
  init: RequestInitLike | undefined,
  get: SseGet,
  runtime: ForkwatchRuntime,
) {
  const attempt = sessionGetSent(get, runtime);
  // In the attempt's context, an HTTP instrumentation's span (and the trace context it injects) joins the resume:
  // when the process already runs in a context, as it does with one (entered-context.ts).
  const send = () => original.call(self, input, init);
  const result = attempt ? withEnteredContext(attempt.context, send) : send();
  return Promise.resolve(result).then(
    response => {
      try {
        watchResponse(response, get, attempt, runtime);
      } catch (error) {
        runtime.diag.error('observing an SSE response failed; this stream is not checked', error);
      }
      return response;
    },
    error => {
      sessionGetUnanswered(attempt, (error as { name?: unknown })?.name === 'AbortError', error);
      throw error;
    },
  );
}

/** The GET leaves: a resume attempt starts when it carries a cursor. Never throws. */
export function sessionGetSent(get: SseGet, runtime: ForkwatchRuntime): ResumeAttempt | undefined {
  try {
    if (get.cursor === undefined) return undefined;
    const session = runtime.clientLedger.touch(get.sessionId, nowMs());
    return new ResumeAttempt(runtime, {
      transport: 'streamable_http',
      session,
      sessionId: get.sessionId,
      protocolVersion: get.protocolVersion,
      cursor: get.cursor,
      heldCursor: get.cursor,
      lostAt: session.lostAt,
    });
  } catch (error) {
    runtime.diag.error('starting a resume attempt failed; this stream is not checked', error);
    return undefined;
  }
}

/** No response came back: the app aborted, or the request failed. */
export function sessionGetUnanswered(attempt: ResumeAttempt | undefined, aborted: boolean, error: unknown): void {
  if (!attempt) return;
  if (aborted) attempt.concludeInconclusive('cancelled');
  else attempt.concludeFailed(error);
}

/**
 * Whether a response to a session GET opens a stream to observe; a resume answered otherwise is rejected. Either is
 * an MCP exchange the wire observer judged (a resume concluded, a session stream watched).
 */
export function sessionGetResponded(
  status: number | undefined,
  contentType: string,
  hasBody: boolean,
  attempt: ResumeAttempt | undefined,
  runtime: ForkwatchRuntime,
): boolean {
  if (status === undefined || status < 200 || status >= 300 || !hasBody || !contentType.includes('text/event-stream')) {
    if (attempt) runtime.wireJudged();
    attempt?.concludeRejected(status);
    return false;
  }
  runtime.wireJudged();
  return true;
}

/**
 * A session stream fed chunk by chunk from undici's diagnostics channel (client/undici-channel-observer.ts), judged as
 * a body observed through fetch is. Each chunk is judged before undici hands it on, so in fail-loud mode `cut` (the
 * request's abort) stops a forked stream before its first frame reaches the app, whose read then fails with undici's
 * `TypeError: terminated` caused by StreamForkDetected; nothing else of the Response changes.
 */
export class SessionStreamWatch {
  private readonly resumed: ResumedStream;
  private readonly frames: SseFrameObserver;
  private ended = false;
  /** The error a fork cuts the stream with, once the chunk that showed it is parsed (the abort ends the stream). */
  private cutWith: unknown = undefined;

  constructor(
    get: SseGet,
    attempt: ResumeAttempt | undefined,
    private readonly runtime: ForkwatchRuntime,
    private readonly cut: ((error: unknown) => void) | undefined,
  ) {
    const session = runtime.clientLedger.touch(get.sessionId, nowMs());
    const reportFork: ForkReport | undefined = cut
      ? info => {
          this.cutWith = errorTheStream(info);
          return this.cutWith;
        }
      : undefined;
    const resumed = new ResumedStream(
      { attempt, session, transport: 'streamable_http', cursor: get.cursor, reportFork },
      runtime,
    );
    this.resumed = resumed;
    this.frames = new SseFrameObserver({ onFrame: id => resumed.onFrame(id) });
    resumed.armTimeout(() => {});
  }

  push(chunk: Uint8Array): void {
    if (this.ended) return;
    try {
      this.resumed.onChunk();
      this.frames.push(chunk);
      if (this.cutWith !== undefined && !this.ended) {
        this.ended = true;
        this.frames.end();
        this.cut?.(this.cutWith);
      }
    } catch (error) {
      this.runtime.diag.error('SSE frame observer failed', error);
    }
  }

  /** The body ended (`cancelled`: the app or its signal stopped it). */
  end(cancelled: boolean): void {
    if (this.ended) return;
    this.ended = true;
    try {
      this.frames.end();
      if (cancelled) this.resumed.onCancel();
      else this.resumed.onEnd();
    } catch (error) {
      this.runtime.diag.error('SSE frame observer failed', error);
    }
  }
}

function watchResponse(
  response: WebResponseLike | null | undefined,
  get: SseGet,
  attempt: ResumeAttempt | undefined,
  runtime: ForkwatchRuntime,
) {
  const status = typeof response?.status === 'number' ? response.status : undefined;
  const contentType = String(response?.headers?.get?.('content-type') ?? '');
  if (!sessionGetResponded(status, contentType, !!response?.body, attempt, runtime)) return;
  const observed = observeResponseBody(
    response!,
    body => observeBody(body, get, attempt, runtime),
    error => runtime.diag.error('observing an SSE stream failed; this stream is not checked', error),
  );
  if (!observed) attempt?.concludeInconclusive('unobservable');
}

/** Fail-loud mode's report to a client seen only on the wire: its stream ends with the error. */
const errorTheStream: ForkReport = info => new StreamForkDetected(info);

function observeBody(
  body: ReadableStream<Uint8Array>,
  get: SseGet,
  attempt: ResumeAttempt | undefined,
  runtime: ForkwatchRuntime,
): ReadableStream<Uint8Array> {
  const session = runtime.clientLedger.touch(get.sessionId, nowMs());
  const resumed = new ResumedStream(
    { attempt, session, transport: 'streamable_http', cursor: get.cursor, reportFork: errorTheStream },
    runtime,
  );
  return resumed.observe(body, 'response');
}
