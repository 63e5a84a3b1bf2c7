/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Marks the requests that a patched SDK transport sends, so the wire-level fetch observer leaves them to the patch
 * and no resume is judged twice. An AsyncLocalStorage (not the OpenTelemetry context) so the mark holds without a
 * registered context manager.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const scope = new AsyncLocalStorage<true>();

export function runAsPatchedTransport<T>(fn: () => T): T {
  return scope.run(true, fn);
}

export function isPatchedTransportRequest(): boolean {
  return scope.getStore() === true;
}
