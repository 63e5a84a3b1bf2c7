/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * subscriptions/listen at 2026-07-28 on the real 2.x packages: no replay, so a publish with no listen stream on the
 * publishing process is lost. Server: `forkwatch_server_listen_publishes_total{outcome="no_listener"}`; client: the
 * dropped stream and the gap until the next acknowledgement. Ground truth: the notifications the client received.
 */
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { connectClient, serverSdk, sleep, startCutter, startReplica, until, useTestResources } from './support';

const publishes = METRICS.serverListenPublishes.prometheusName;
const streams = METRICS.clientListenStreams.prometheusName;
const gap = METRICS.clientListenGapSeconds.prometheusName;

const t = useTestResources();

async function listeningClient(url: string) {
  const client = await connectClient(url);
  t.cleanups.push(() => client.close().catch(() => {}));
  const received: string[] = [];
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    received.push('tools');
  });
  return { client, received };
}

const metric = async (name: string, labels: Record<string, string> = {}) =>
  sampleOne(await t.fw!.metrics(), name, labels);

describe('listen streams at 2026-07-28', () => {
  test('healthy: a publish reaches the listen stream on this process', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const a = await startReplica();
    t.cleanups.push(() => a.close());
    const { client, received } = await listeningClient(a.url);
    const sub = await client.listen({ toolsListChanged: true });
    expect(sub.honoredFilter).toEqual({ toolsListChanged: true });
    a.handler.notify.toolsChanged();
    await until(() => received.length === 1, 'the notification');
    expect(await metric(publishes, { outcome: 'listened' })).toBe(1);
    expect(await metric(publishes, { outcome: 'no_listener' })).toBe(0);
    await sub.close();
    await until(async () => (await metric(streams, { outcome: 'cancelled' })) === 1, 'the cancelled stream');
    expect(await metric(streams, { outcome: 'dropped' })).toBe(0);
    expect(sampleOne(await t.fw.metrics(), `${gap}_count`) ?? 0).toBe(0);
  });

  test('a second replica publishing to a listen stream held by the first: no_listener there, nothing received', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const a = await startReplica();
    const b = await startReplica();
    t.cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    const { client, received } = await listeningClient(a.url);
    const sub = await client.listen({ toolsListChanged: true });
    b.handler.notify.toolsChanged(); // the default InMemoryServerEventBus never carries it to A
    b.handler.notify.toolsChanged();
    await sleep(100);
    expect(received).toHaveLength(0); // ground truth: both lost
    expect(await metric(publishes, { outcome: 'no_listener' })).toBe(2);
    // Control: A's own publish arrives, proving the stream was live all along.
    a.handler.notify.toolsChanged();
    await until(() => received.length === 1, 'the control notification');
    expect(await metric(publishes, { outcome: 'listened' })).toBe(1);
    await sub.close();
  });

  test('a listen stream dropped while notifications are published: no_listener, dropped, and the gap to the next ack', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const a = await startReplica();
    t.cleanups.push(() => a.close());
    const cutter = await startCutter(a.url);
    t.cleanups.push(() => cutter.close());
    const { client, received } = await listeningClient(cutter.url);
    const first = await client.listen({ toolsListChanged: true });
    cutter.cut();
    expect(await first.closed).toBe('remote');
    await until(async () => (await metric(streams, { outcome: 'dropped' })) === 1, 'the dropped stream');
    // The server has torn the subscription down: what is published now has no listener anywhere.
    await until(() => (a.handler.bus as { listenerCount: number }).listenerCount === 0, 'the teardown');
    for (let i = 0; i < 3; i++) a.handler.notify.toolsChanged();
    await sleep(200);
    const second = await client.listen({ toolsListChanged: true });
    a.handler.notify.toolsChanged();
    await until(() => received.length === 1, 'the notification after the re-listen');
    expect(received).toHaveLength(1); // ground truth: the three published in the gap are lost
    const m = await t.fw.metrics();
    expect(sampleOne(m, publishes, { outcome: 'no_listener' })).toBe(3);
    expect(sampleOne(m, publishes, { outcome: 'listened' })).toBe(1);
    expect(sampleOne(m, `${gap}_count`)).toBe(1);
    expect(sampleOne(m, `${gap}_sum`)).toBeGreaterThanOrEqual(0.2);
    await second.close();
  });

  test('healthy: a server closing the stream gracefully is `closed`, not dropped', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const a = await startReplica();
    const { client } = await listeningClient(a.url);
    const sub = await client.listen({ toolsListChanged: true });
    await a.handler.close();
    await sub.closed;
    await until(async () => (await metric(streams, { outcome: 'closed' })) === 1, 'the graceful close');
    expect(await metric(streams, { outcome: 'dropped' })).toBe(0);
    await a.close();
  });
});
