/**
 * The verdict of one resumed stream: pending from the resume until its first frame, the stream's end, a cancel or
 * the verdict timeout, whichever comes first, and concluded exactly once. The transport patch and the fetch
 * observer share it, so both judge a first frame, and a stream without one, the same way.
 */
import { eventIdKey } from '../core/event-id';
import type { SessionRecord } from '../core/ledger';
import { type FirstFrameVerdict, decideFirstFrame } from '../core/verdict';
import type { ForkwatchRuntime } from '../runtime';
import type { ResumeAttempt } from './resume-attempt';

export class FirstFrameWatch {
  private pending: boolean;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly attempt: ResumeAttempt | undefined,
    private readonly session: SessionRecord,
    private readonly runtime: ForkwatchRuntime,
  ) {
    this.pending = attempt !== undefined && !attempt.isConcluded;
  }

  /** True until the verdict is taken: fail-loud mode holds frames back while it is. */
  get isPending(): boolean {
    return this.pending;
  }

  /** The stream's first frame decides; later frames (or none pending) return undefined. */
  judge(id: string | undefined): FirstFrameVerdict | undefined {
    const attempt = this.take();
    if (!attempt) return undefined;
    const verdict = decideFirstFrame({
      cursor: attempt.init.heldCursor,
      firstId: id === undefined || id === '' ? id : eventIdKey(id),
      codec: this.runtime.settings.codec,
      wasConsumed: candidate => this.session.hasConsumed(candidate),
    });
    attempt.concludeWithFirstFrame(id, verdict);
    return verdict;
  }

  /** The stream ended or was cancelled before its first frame. */
  endWithoutFrame(why: 'stream_ended' | 'cancelled'): void {
    this.take()?.concludeInconclusive(why);
    this.stopTimer();
  }

  /** Concludes `timeout` when no frame came within the verdict timeout; `onTimeout` then releases held frames. */
  armTimeout(onTimeout: () => void): void {
    if (!this.pending) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const attempt = this.take();
      if (!attempt) return;
      attempt.concludeInconclusive('timeout');
      onTimeout();
    }, this.runtime.settings.verdictTimeoutMs);
    // Never keep the host process alive for a verdict.
    this.timer.unref?.();
  }

  private take(): ResumeAttempt | undefined {
    if (!this.pending || !this.attempt) return undefined;
    this.pending = false;
    this.stopTimer();
    return this.attempt;
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
