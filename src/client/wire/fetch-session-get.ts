/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The fetch wrapper's work on one session GET (fetch-wrapper.ts decides which): the resume attempt when the GET carries
 * a cursor (session-get.ts), run in the attempt's context, and the response body's frames observed as a patched SDK
 * transport's are (resumed-stream.ts), through the very Response fetch returned.
 */
import { withEnteredContext } from '../../shared/entered-context';
import { observeResponseBody } from '../../shared/response-body';
import type { FetchLike, RequestInitLike, WebResponseLike } from '../../shared/internal-types';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import type { ResumeAttempt } from '../observer/resume-attempt';
import { ResumedStream } from '../observer/resumed-stream';
import type { SseGet } from './session-get-request';
import { errorTheStream, sessionGetResponded, sessionGetSent, sessionGetUnanswered } from './session-get';

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
