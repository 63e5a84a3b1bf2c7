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

/** What observes a settlement (observeSettlement): an object's methods, so a hot path makes one object per call. */
export interface SettlementObserver {
  fulfilled(value: unknown): unknown;
  rejected(error: unknown): unknown;
  /** What `fulfilled` or `rejected` threw, or the rejection of the promise either returned. */
  observerFailed(error: unknown): void;
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
  return observeSettlement(result, {
    fulfilled: onFulfilled,
    rejected: onRejected,
    observerFailed: onObserverError,
  });
}

/** observedPromise with the observers as one object's methods. */
export function observeSettlement<T>(result: T, observer: SettlementObserver): T {
  if (!isThenable(result)) {
    // Observed a microtask later, as a promise's value would be: nothing of the host's is involved.
    void Promise.resolve().then(() => settled(observer, true, result));
    return result;
  }
  return result.then(
    value => {
      settled(observer, true, value);
      return value;
    },
    error => {
      settled(observer, false, error);
      throw error;
    },
  ) as T;
}

/** Runs the observer of one outcome; an observer may be async (a resume concluded once its replay settled). */
function settled(observer: SettlementObserver, ok: boolean, value: unknown): void {
  try {
    const outcome = ok ? observer.fulfilled(value) : observer.rejected(value);
    if (isThenable(outcome)) outcome.then(undefined, error => observerFailed(observer, error));
  } catch (error) {
    observerFailed(observer, error);
  }
}

function observerFailed(observer: SettlementObserver, error: unknown): void {
  try {
    observer.observerFailed(error);
  } catch {
    // The last guard before the host.
  }
}
