/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire-level observer's work on one session GET (fetch-observer.ts decides which): a resume attempt when the GET
 * carries a cursor, and the response body's frames observed as a patched SDK transport's are (resumed-stream.ts).
 */
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
  let attempt: ResumeAttempt | undefined;
  try {
    if (get.cursor !== undefined) {
      const session = runtime.clientLedger.touch(get.sessionId, nowMs());
      attempt = new ResumeAttempt(runtime, {
        transport: 'streamable_http',
        session,
        sessionId: get.sessionId,
        protocolVersion: get.protocolVersion,
        cursor: get.cursor,
        heldCursor: get.cursor,
        lostAt: session.lostAt,
      });
    }
  } catch (error) {
    runtime.diag.error('starting a resume attempt failed; this stream is not checked', error);
  }
  // In the attempt's context, an HTTP instrumentation's span (and the trace context it injects) joins the resume:
  // when the process already runs in a context, as it does with one (entered-context.ts).
  const send = () => original.call(self, input, init);
  const result = attempt ? withEnteredContext(attempt.context, send) : send();
  const started = attempt;
  return Promise.resolve(result).then(
    response => {
      try {
        watchResponse(response, get, started, runtime);
      } catch (error) {
        runtime.diag.error('observing an SSE response failed; this stream is not checked', error);
      }
      return response;
    },
    error => {
      if (started) {
        const aborted = (error as { name?: unknown })?.name === 'AbortError';
        if (aborted) started.concludeInconclusive('cancelled');
        else started.concludeFailed(error);
      }
      throw error;
    },
  );
}

function watchResponse(
  response: WebResponseLike | null | undefined,
  get: SseGet,
  attempt: ResumeAttempt | undefined,
  runtime: ForkwatchRuntime,
) {
  const status = typeof response?.status === 'number' ? response.status : undefined;
  const contentType = String(response?.headers?.get?.('content-type') ?? '');
  if (
    status === undefined ||
    status < 200 ||
    status >= 300 ||
    !response?.body ||
    !contentType.includes('text/event-stream')
  ) {
    attempt?.concludeRejected(status);
    return;
  }
  const observed = observeResponseBody(
    response,
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
  return resumed.observe(body, 'bytes');
}
