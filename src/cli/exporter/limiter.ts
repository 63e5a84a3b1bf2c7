/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** At most `concurrency` probes at once and at most `queue` waiting; beyond that, callers are turned away. */
export class Limiter {
  private running = 0;
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

  /** Runs `task` when a slot is free; undefined (without running it) when the queue is full. */
  async run<T>(task: () => Promise<T>): Promise<{ value: T } | undefined> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) return undefined;
      await new Promise<void>(resolve => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return { value: await task() };
    } finally {
      // Hand the slot straight to the next waiter, so `running` never drops below what is really running.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
