/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe's time: a deadline for the whole run that every step honours (it aborts every exchange in flight and
 * bounds every wait), the bound on one exchange (`--timeout`), and the shorter wait for a frame the server owes at
 * once (a replay, an event the probe just made it send): a correct server writes those within milliseconds, so a
 * silent 200 costs OWED_FRAME_MS (or four times the median answer so far, on a slow network), not a whole
 * --timeout. The median, not the slowest: one cold first answer (a replica starting a session) must not stretch
 * every wait.
 */

import { setMaxListeners } from 'node:events';

/** The least wait for a frame the server owes at once; at most --timeout. */
export const OWED_FRAME_MS = 2000;
/** A frame the server owes may take this many times its median answer so far (a round trip or two after it). */
const ANSWER_FACTOR = 4;
/** Answers whose times are kept for the median (the latest). */
const ANSWERS_KEPT = 64;

/** How long after the stop a wait that reaches it still ends by itself, should the stop's timer never run. */
const STOP_SLACK_MS = 1000;

export class Budget {
  /** When the probe stops (epoch ms): the session's DELETE still goes out after it. */
  readonly stopAt: number;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly answers: number[] = [];

  constructor(
    readonly timeoutMs: number,
    /** The run's whole time, from now; Infinity for none. */
    runMs: number,
    /** Stops the run early from outside (the exporter's abandoned scrape). */
    external?: AbortSignal,
  ) {
    this.stopAt = Date.now() + runMs;
    // Every exchange in flight listens (a pipeline holds a dozen at once): no leak, no warning on stderr.
    setMaxListeners(0, this.controller.signal);
    const stop = () => this.controller.abort();
    this.timer = setTimeout(stop, Math.min(runMs, 2 ** 31 - 1));
    if (external?.aborted) stop();
    else external?.addEventListener('abort', stop, { once: true });
  }

  /** Aborted once the run must stop. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * True from the stop on, whether or not its timer has fired yet: a wait the stop cut short ends when the clock
   * reaches the stop, and the stop's timer may run after that wait's own (a busy event loop runs timers late and
   * out of their wall-clock order), so the one who judges what the wait found must already see the stop.
   */
  get stopped(): boolean {
    return this.controller.signal.aborted || Date.now() >= this.stopAt;
  }

  /** Time left before the stop (ms, never negative). */
  left(): number {
    return Math.max(0, this.stopAt - Date.now());
  }

  /** The end of one exchange's wait started now: --timeout, or the stop if it comes first. */
  stepDeadline(): number {
    return Math.min(Date.now() + this.timeoutMs, this.stopAt);
  }

  /** How long a frame the server owes at once is waited for. */
  owedFrameMs(): number {
    return Math.min(this.timeoutMs, Math.max(OWED_FRAME_MS, ANSWER_FACTOR * this.medianAnswerMs()));
  }

  /** The end of the wait, started now, for a frame the server owes at once. */
  owedFrameDeadline(): number {
    return Math.min(Date.now() + this.owedFrameMs(), this.stopAt);
  }

  /** A wait of `ms` that ends early at the stop. */
  async sleep(ms: number): Promise<void> {
    const left = this.left();
    if (Math.min(ms, left) <= 0) return;
    await new Promise<void>(resolve => {
      const done = () => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      // A wait that reaches the stop ends with the stop's abort: a timer of its own for the same moment may run
      // first, and whoever wakes would find the run not yet stopped. The later timer only covers a disposed budget.
      const timer = setTimeout(done, ms < left ? ms : left + STOP_SLACK_MS);
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  /** An answer's headers came after `ms`. */
  answered(ms: number): void {
    this.answers.push(ms);
    if (this.answers.length > ANSWERS_KEPT) this.answers.shift();
  }

  private medianAnswerMs(): number {
    if (this.answers.length === 0) return 0;
    const sorted = [...this.answers].sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)]!;
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}
