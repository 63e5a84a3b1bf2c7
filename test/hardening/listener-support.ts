/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What the hostile-load tests of both listeners share (issue 53); the clients themselves: bench/listeners/attacks.mjs. */
import { expect } from 'vitest';
import { LISTENER_LIMITS } from '../../src/shared/listener';
// @ts-expect-error: plain ESM module without types
import { get, sleep, slowConnections } from '../../bench/listeners/attacks.mjs';

export const MB = 1024 * 1024;
/** Slack for a loaded 2-core machine on top of the promised bound. */
const SLACK_MS = 1_000;

/** Waits until `rss()` is back within `bound` bytes of `baseline`; the last reading. */
export async function settlesWithin(rss: () => number, baseline: number, bound: number, timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  let now = rss();
  while (now - baseline > bound && Date.now() < end) {
    await sleep(500);
    now = rss();
  }
  return now;
}

/** Every slow connection is closed within the header timeout, and the port still answers meanwhile. */
export async function slowClientsClosed(port: number, url: string) {
  const loris = slowConnections(port, 100, { everyMs: 300 });
  const silent = slowConnections(port, 20, { silent: true });
  await sleep(500);
  expect((await get(url)).status).toBe(200);
  await Promise.race([Promise.all([loris.closed, silent.closed]), sleep(LISTENER_LIMITS.headersTimeoutMs * 3)]);
  const open = loris.open + silent.open;
  loris.stop();
  silent.stop();
  expect(open).toBe(0);
  expect(Math.max(...loris.closedAfterMs, ...silent.closedAfterMs)).toBeLessThan(
    LISTENER_LIMITS.headersTimeoutMs + SLACK_MS,
  );
  expect((await get(url)).status).toBe(200);
}
