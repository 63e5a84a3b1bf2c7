/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Dead streams on the reference deployment (issue 41.5): deploy/server.cjs on Debian's Redis behind Debian's HAProxy
 * (deploy/haproxy/haproxy.cfg) and nginx (deploy/nginx/nginx.conf), a client process that holds the session's GET
 * stream and is SIGKILLed (the kernel closes its socket), then the same session resumes from its last event through
 * the balancer. Through the reference configs the replica lets go of the dead stream at once and the resume gets 200;
 * behind HAProxy without `option abortonclose` the replica holds it until a keep-alive write fails and answers 409
 * meanwhile. lab/dead-stream/run.mjs measures the holds (deploy/README.md, "Dead streams").
 */
import { afterAll, describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { measureHold, startDeployment } from '../../lab/dead-stream/measure.mjs';

interface Deployment {
  url: string;
  stop(): Promise<void>;
}
interface Hold {
  holdMs: number | undefined;
  conflicts: number;
  statuses: number[];
}

const started: Deployment[] = [];
async function deployment(options: Record<string, unknown>): Promise<Deployment> {
  const d: Deployment = await startDeployment(options);
  started.push(d);
  return d;
}
afterAll(async () => {
  for (const d of started) await d.stop();
});

/**
 * 2 s: the reference configs release the stream before the first resume (sent once the client's process is gone)
 * arrives, a few hundred ms on a loaded machine; without abortonclose the hold lasts at least one 5 s keep-alive
 * period (4.8 to 9.8 s measured), so 2 s tells them apart with margin on both sides.
 */
const WITHIN_MS = 2_000;

describe('a client that dies holding its SSE stream, through the reference deployment', () => {
  test.each([
    ['HAProxy (option abortonclose)', { front: 'haproxy' }],
    ['nginx (proxy_buffering off, proxy_ignore_client_abort off)', { front: 'nginx' }],
  ])('%s: the replica lets go at once, the resume gets 200 and no 409', async (_, options) => {
    const d = await deployment(options);
    const hold: Hold = await measureHold(d.url, { maxMs: WITHIN_MS });
    expect(hold.statuses).toEqual([]);
    expect(hold.conflicts).toBe(0);
    expect(hold.holdMs).toBeDefined();
  });

  test('control, HAProxy without option abortonclose: the replica holds the dead stream and answers 409', async () => {
    const d = await deployment({ front: 'haproxy', abortOnClose: false });
    const hold: Hold = await measureHold(d.url, { maxMs: WITHIN_MS });
    expect(hold.statuses).toEqual([]);
    expect(hold.holdMs).toBeUndefined();
    expect(hold.conflicts).toBeGreaterThan(0);
  });
});
