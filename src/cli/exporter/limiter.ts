/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * At most `concurrency` probes at once and at most `queue` waiting; beyond that, callers are turned away. A caller
 * that goes away (its scrape's client hung up) gives its place back at once: a waiter leaves the queue, a running
 * task's slot goes to the next waiter while the task, told through the same signal, ends its session in the
 * background. At most `concurrency` such tasks end at once; past that, a cancelled task keeps its slot until it ends.
 */
export type LimiterOutcome<T> = { value: T } | 'queue_full' | 'cancelled';

export class Limiter {
  private running = 0;
  private ending = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {}

  get inFlight(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Cancelled tasks still ending their session, their slots already given back. */
  get endingInBackground(): number {
    return this.ending;
  }

  /** Runs `task` when a slot is free; `queue_full` (without running it) when the queue is full. */
  async run<T>(task: () => Promise<T>, cancel?: AbortSignal): Promise<LimiterOutcome<T>> {
    if (cancel?.aborted) return 'cancelled';
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) return 'queue_full';
      if (!(await this.admitted(cancel))) return 'cancelled';
      if (cancel?.aborted) {
        // Gone between the hand-over and now: the slot goes on to the next waiter.
        this.handOn();
        return 'cancelled';
      }
    } else {
      this.running++;
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.handOn();
    };
    const running = task();
    const onCancel = () => {
      if (this.ending >= this.concurrency) return;
      this.ending++;
      running.then(
        () => this.ending--,
        () => this.ending--,
      );
      release();
    };
    cancel?.addEventListener('abort', onCancel, { once: true });
    try {
      const value = await running;
      return cancel?.aborted ? 'cancelled' : { value };
    } finally {
      cancel?.removeEventListener('abort', onCancel);
      release();
    }
  }

  /** Gives a slot up: straight to the next waiter, so `running` never drops below what holds a slot. */
  private handOn(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }

  /** Waits in the queue: true once handed a slot, false when cancelled first (and out of the queue). */
  private admitted(cancel: AbortSignal | undefined): Promise<boolean> {
    return new Promise(resolve => {
      const onCancel = () => {
        const at = this.waiting.indexOf(admit);
        if (at !== -1) this.waiting.splice(at, 1);
        resolve(false);
      };
      const admit = () => {
        cancel?.removeEventListener('abort', onCancel);
        resolve(true);
      };
      this.waiting.push(admit);
      cancel?.addEventListener('abort', onCancel, { once: true });
    });
  }
}
