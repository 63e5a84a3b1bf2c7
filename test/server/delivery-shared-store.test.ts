/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger with `sharedEventStore`: two replicas (two web-standard transports of the real SDK, 1.32.2 and
 * server 2.x, for one session) share one event store. Replica B stores notifications for a session whose GET stream
 * is on A; whether they are lost depends on a replay somewhere, so B counts them for the fleet balance
 * (forkwatch_server_shared_unreplayed_events_total) instead of as no_listener, and a replay on A counts what it sent
 * that was not pending on A (forkwatch_server_replayed_unpending_events_total). Without the flag B judges alone.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { sample } from '../support/lab';
import {
  type Forkwatch,
  LabEventStore,
  getRequest,
  hydrate,
  notification,
  readFrames,
  requireFrom,
  setupForkwatch,
} from './support';

const req = requireFrom();
const v1 = req('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const v2 = req('@modelcontextprotocol/server');
const WINDOW_MS = 150;
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

async function counters() {
  const m = await fw!.metrics();
  const t = { transport: 'streamable_http' };
  return {
    noListener: sample(m, METRICS.serverUndeliveredEvents.prometheusName, { ...t, reason: 'no_listener' }),
    sharedNoListener: sample(m, METRICS.serverSharedUnreplayedEvents.prometheusName, { ...t, reason: 'no_listener' }),
    replayedUnpending: sample(m, METRICS.serverReplayedUnpendingEvents.prometheusName, t),
  };
}

const ping = () =>
  new Request('http://127.0.0.1/mcp', {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-session-id': 'session-1',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }),
  });

describe.each([
  { label: '@modelcontextprotocol/sdk 1.32.2', module: v1 },
  { label: '@modelcontextprotocol/server 2.x', module: v2 },
])('$label: a shared event store', ({ module }) => {
  const Transport = module.WebStandardStreamableHTTPServerTransport;

  /** A holds the GET stream (event 1 delivered, then cut); B stores 2 and 3 and goes on talking past the window. */
  async function splitBrain(sharedEventStore: boolean) {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS, sharedEventStore }, module);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const a = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: store }));
    const b = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: store }));
    const stream = await a.handleRequest(getRequest({}));
    await a.send(notification(1));
    expect((await readFrames(stream.body, { count: 1 })).map(f => f.id)).toEqual(['1']);
    await b.handleRequest(ping());
    await b.send(notification(2));
    await b.send(notification(3));
    for (let i = 0; i < 3; i++) {
      await sleep(WINDOW_MS);
      await b.handleRequest(ping());
    }
    return { a, b };
  }

  test('B stores for a stream on A: counted for the fleet balance, not as no_listener; a resume on A replays them and says so', async () => {
    const { a } = await splitBrain(true);
    expect(await counters()).toEqual({ noListener: 0, sharedNoListener: 2, replayedUnpending: 0 });
    const resumed = await a.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect((await readFrames(resumed.body, { count: 2 })).map(f => f.id)).toEqual(['2', '3']);
    await fw!.settle();
    // The balance: 2 stored and not replayed on B, 2 replayed on A that were not pending there: 0 lost.
    expect(await counters()).toEqual({ noListener: 0, sharedNoListener: 2, replayedUnpending: 2 });
  });

  test('without sharedEventStore, B judges alone: no_listener, as with a store per process', async () => {
    await splitBrain(false);
    expect(await counters()).toEqual({ noListener: 2, sharedNoListener: 0, replayedUnpending: 0 });
  });
});
