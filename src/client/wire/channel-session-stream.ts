/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { SseFrameObserver } from '../../core/sse-frame-observer';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import type { ResumeAttempt } from '../observer/resume-attempt';
import { type ForkReport, ResumedStream } from '../observer/resumed-stream';
import type { SseGet } from './session-get-request';
import { errorTheStream } from './session-get';

/**
 * A session stream fed chunk by chunk from undici's diagnostics channel (undici-channels.ts), judged as
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
