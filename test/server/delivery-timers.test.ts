/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger's sweep timer in a host that fakes timers (the SDK's own suite uses vitest's fake timers and
 * counts them with vi.getTimerCount()): forkwatch's timer is not the host's, it is gone once nothing is pending, and
 * the ledger still sweeps after the host discarded its fakes. Real web-standard transport (SDK 1.32.2), real store.
 */
import { afterEach, expect, test, vi } from 'vitest';
import { probeServerDelivery } from '../../src/server/server-delivery';
import { waitUntil } from '../support/prometheus';
import { type Forkwatch, LabEventStore, hydrate, notification, requireFrom, setupForkwatch } from './support';

const { WebStandardStreamableHTTPServerTransport: Transport } = requireFrom()(
  '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js',
);

let fw: Forkwatch | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await fw?.teardown();
  fw = undefined;
});

const transportWithStore = () =>
  hydrate(
    new Transport({ sessionIdGenerator: () => 'session-1', eventStore: new LabEventStore({ idFormat: 'integer' }) }),
  );

test('under fake timers: an event pending and then closed leaves no timer in the host', async () => {
  fw = setupForkwatch(
    { deliveryWindowMs: 150 },
    requireFrom()('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  );
  const delivery = probeServerDelivery(fw.instrumentation.serverDelivery);
  vi.useFakeTimers();
  const transport = transportWithStore();
  await transport.send(notification(1)); // no GET stream here: pending
  expect(delivery.pendingEvents(transport)).toBe(1);
  await transport.close();
  expect(delivery.sessionsWithPending).toBe(0);
  expect(vi.getTimerCount()).toBe(0);
});

test('after a fake-timer host discarded its timers, the ledger sweeps again', async () => {
  fw = setupForkwatch(
    { deliveryWindowMs: 150 },
    requireFrom()('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  );
  const delivery = probeServerDelivery(fw.instrumentation.serverDelivery);
  vi.useFakeTimers();
  await transportWithStore().send(notification(1));
  vi.clearAllTimers();
  vi.useRealTimers();
  const sweeps = delivery.sweeps;
  await transportWithStore().send(notification(2));
  await waitUntil(() => delivery.sweeps > sweeps, { intervalMs: 20, timeoutMs: 3000, what: 'a sweep' });
  expect(delivery.sweeps).toBeGreaterThan(sweeps);
});
