/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * How forkwatch/register ends: on SIGTERM/SIGINT it shuts its SDK down (bounded) and then lets the signal take its
 * default course when the app has no listener of its own; when the event loop runs dry it flushes once.
 */
import { clearTimeout, setTimeout } from 'node:timers';

/** How long a SIGTERM/SIGINT waits for the last export before the signal takes its course. */
export const SHUTDOWN_TIMEOUT_MS = 5_000;

export function withTimeout(promise: Promise<void>, ms = SHUTDOWN_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function installExitHandlers(shutdown: () => Promise<void>, flush: () => Promise<void>): void {
  const onSignal = (signal: NodeJS.Signals) => {
    process.removeListener('SIGTERM', onTerm);
    process.removeListener('SIGINT', onInt);
    void shutdown().then(() => {
      // Our listener replaced Node's default action: if the app has no listener of its own, take that action now.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  };
  const onTerm = () => onSignal('SIGTERM');
  const onInt = () => onSignal('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  // The event loop ran dry: push what periodic exporters hold (once; the exit follows when the flush is done).
  process.once('beforeExit', () => void flush());
}
