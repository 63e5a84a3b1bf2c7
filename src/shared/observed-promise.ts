/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Observing a promise a wrapped method hands to the host, without taking its rejection from it.
 *
 * Any reaction on a promise marks it handled: `result.then(onOk, onError)` beside a `return result` means a host that
 * never awaits `transport.send()` no longer gets `unhandledRejection` (by default the end of the process) when it
 * rejects, because forkwatch's reaction handled it. No reaction on the original can avoid that, so the host is handed
 * the reaction's own promise instead: it settles as the original does (same value, same reason, same species) one
 * microtask later, and when it rejects with nothing of the host's on it, Node reports it unhandled exactly as it
 * would have reported the original.
 */

/** Whether `value` is a thenable whose settlement can be observed. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Calls `onFulfilled` / `onRejected` when `result` settles and returns what the host must get in its place: a promise
 * that settles as `result` does (a non-promise `result` is returned as it is, observed a microtask later). The observers run
 * guarded: what they throw or reject with goes to `onObserverError`, never to the host.
 */
export function observedPromise<T>(
  result: T,
  onFulfilled: (value: unknown) => unknown,
  onRejected: (error: unknown) => unknown,
  onObserverError: (error: unknown) => void,
): T {
  const failed = (error: unknown) => {
    try {
      onObserverError(error);
    } catch {
      // The last guard before the host.
    }
  };
  // An observer may be async (a resume concluded once its replay settled): its own rejection is its own.
  const guarded = (step: () => unknown) => {
    try {
      const outcome = step();
      if (isThenable(outcome)) outcome.then(undefined, failed);
    } catch (error) {
      failed(error);
    }
  };
  if (!isThenable(result)) {
    // Observed a microtask later, as a promise's value would be: nothing of the host's is involved.
    void Promise.resolve().then(() => guarded(() => onFulfilled(result)));
    return result;
  }
  return result.then(
    value => {
      guarded(() => onFulfilled(value));
      return value;
    },
    error => {
      guarded(() => onRejected(error));
      throw error;
    },
  ) as T;
}
