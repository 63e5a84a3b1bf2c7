/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Runs the probe's resumes as a pipeline: each attempt opens its connection once the previous one has its answer's
 * headers, and then all wait for their first frames together. Connections still open in the same order as one after
 * another (so a round-robin balancer spreads them the same way), but silent streams cost one step time in all,
 * not one each: a deployment whose resumes answer 200 and then nothing is judged within one wait. A server that
 * does not answer at all holds the pipeline for one --timeout, not one per attempt.
 */
import type { Turn } from './resume';

export type PipelineTask<T> = (turn: Turn) => Promise<T>;

export async function runPipelined<T>(
  tasks: readonly PipelineTask<T>[],
  onSettled?: (done: number) => void,
): Promise<T[]> {
  const results: Promise<T>[] = [];
  let done = 0;
  // Once an attempt got no answer at all, the server is not answering: the rest open together.
  let stalled = false;
  for (const task of tasks) {
    const earlier = Promise.allSettled(results).then(() => undefined);
    let opened!: () => void;
    const open = new Promise<void>(resolve => (opened = () => resolve()));
    const result = task({
      opened: stall => {
        if (stall) stalled = true;
        opened();
      },
      earlier,
    });
    results.push(result);
    void result.then(
      () => onSettled?.(++done),
      () => onSettled?.(++done),
    );
    if (!stalled) await Promise.race([open, result.then(noop, noop)]);
  }
  return Promise.all(results);
}

function noop(): void {}
