/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Both wire paths' work on one session GET (a resume when it carries a cursor): the resume attempt starts when the GET
 * leaves, and concludes rejected or waits for its first frame once the answer's status is known. The fetch wrapper
 * (fetch-session-get.ts) and the undici channels (channel-watches.ts) call these from their own events. Loaded on the
 * first MCP exchange, with them.
 */
import { StreamForkDetected } from '../../shared/errors';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import { ResumeAttempt } from '../observer/resume-attempt';
import type { ForkReport } from '../observer/resumed-stream';
import type { SseGet } from './session-get-request';

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

/** Fail-loud mode's report to a client seen only on the wire: its stream ends with the error. */
export const errorTheStream: ForkReport = info => new StreamForkDetected(info);
