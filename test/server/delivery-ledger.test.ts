/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger in process, against the real web-standard transports (SDK 1.32.2 and server 2.x) with a
 * real store: events stored while a stream has no connection here, then a replay, more requests, or a close.
 * A short window (deliveryWindowMs) keeps the tests quick; positive cases wait for the ledger's own timer.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { probeServerDelivery } from '../../src/server/server-delivery';
import { METRICS, SERVER_UNDELIVERED_REASONS } from '../../src/shared/names';
import { sample } from '../support/lab';
import { waitUntil } from '../support/prometheus';
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

const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const WINDOW_MS = 150;

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

async function counts(): Promise<Record<string, number>> {
  const m = await fw!.metrics();
  return Object.fromEntries(
    SERVER_UNDELIVERED_REASONS.map(reason => [
      reason,
      sample(m, undelivered, { transport: 'streamable_http', reason }) ?? NaN,
    ]),
  );
}
const none = { stream_moved: 0, no_listener: 0, dropped: 0, abandoned: 0, in_flight: 0 };

function post(body: unknown, sessionId = 'session-1'): Request {
  return new Request('http://127.0.0.1/mcp', {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify(body),
  });
}
/** A request of the session that needs no answer: activity on this process. */
const ping = () => post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });

describe.each([
  { label: '@modelcontextprotocol/sdk 1.32.2', module: v1 },
  { label: '@modelcontextprotocol/server 2.x', module: v2 },
])('$label: delivery ledger', ({ module }) => {
  const Transport = module.WebStandardStreamableHTTPServerTransport;
  const transportWith = (eventStore: unknown) =>
    hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore }));
  const delivery = () => probeServerDelivery(fw!.instrumentation.serverDelivery);

  /**
   * Waits until no pending stream is in its window any more, checks that overdue events alone count nothing (the
   * client may have crashed), then sends one more request: the session is alive here and did not come back.
   */
  async function talkAfterWindow(transport: { handleRequest(req: Request): Promise<Response> }): Promise<void> {
    await waitUntil(() => delivery().streamsInWindow() === 0, { intervalMs: 20, what: 'the window to end' });
    expect(delivery().sessionsWithPending).toBe(1);
    expect(await counts()).toEqual(none);
    await transport.handleRequest(ping());
    expect(delivery().sessionsWithPending).toBe(0);
  }

  /**
   * After a resume here: nothing is pending, and the session's requests before and after the window count nothing.
   */
  async function expectSettledAndSilent(transport: { handleRequest(req: Request): Promise<Response> }): Promise<void> {
    await fw!.settle();
    expect(delivery().pendingEvents(transport)).toBe(0);
    await transport.handleRequest(ping());
    await waitUntil(() => delivery().streamsInWindow() === 0, { intervalMs: 20, what: 'the window to end' });
    await transport.handleRequest(ping());
    expect(await counts()).toEqual(none);
  }

  test('a stream dropped and resumed here: the replay delivers the pending events, nothing is counted', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    const first = await transport.handleRequest(getRequest({}));
    await transport.send(notification(1));
    expect((await readFrames(first.body)).map(f => f.id)).toEqual(['1']); // then the connection drops
    await transport.send(notification(2));
    await transport.send(notification(3));
    expect((await transport.handleRequest(ping())).status).toBe(202);
    expect(delivery().pendingEvents(transport)).toBe(2);
    const resumed = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect((await readFrames(resumed.body)).map(f => f.id)).toEqual(['2', '3']);
    await fw.settle();
    expect(delivery().pendingEvents(transport)).toBe(0);
    expect(delivery().sessionsWithPending).toBe(0);
    expect(await counts()).toEqual(none);
  });

  test('the session goes on talking here and never comes back for its standalone events: stream_moved', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const first = await transport.handleRequest(getRequest({}));
    await transport.send(notification(1));
    expect((await readFrames(first.body)).length).toBe(1);
    for (let n = 2; n <= 4; n++) await transport.send(notification(n));
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 3 });
  });

  test('a request stream dropped before its notifications and response: stream_moved once the session is active', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const call = await transport.handleRequest(
      post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } }),
    );
    expect(call.status).toBe(200);
    await call.body!.cancel(); // the client's POST stream drops
    await transport.send(notification(1), { relatedRequestId: 7 });
    await transport.send({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    expect(delivery().pendingEvents(transport)).toBe(2);
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 2 });
  });

  test('a session that never opens a GET here: its standalone events are no_listener', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    await transport.send(notification(1));
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, no_listener: 1 });
  });

  test('no event store and no stream: dropped, once the session shows activity', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(undefined);
    await transport.send(notification(1));
    await transport.send(notification(2));
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, dropped: 2 });
  });

  test('a client that went away (no further request) and a session closed by the app: abandoned, never a loss', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const first = await transport.handleRequest(getRequest({}));
    await transport.send(notification(1));
    await readFrames(first.body);
    await transport.send(notification(2));
    await transport.send(notification(3));
    // The ledger's timer runs past the window: with no activity since, nothing is judged.
    const sweeps = delivery().sweeps;
    await waitUntil(() => delivery().sweeps >= sweeps + 2, { intervalMs: 20, what: 'two sweeps' });
    expect(delivery().pendingEvents(transport)).toBe(2);
    expect(await counts()).toEqual(none);
    await transport.close();
    expect(await counts()).toEqual({ ...none, abandoned: 2 });
  });

  test('a DELETE right after events went pending: abandoned', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    await transport.handleRequest(getRequest({})).then((r: Response) => r.body!.cancel());
    await transport.send(notification(1));
    const res = await transport.handleRequest(
      new Request('http://127.0.0.1/mcp', {
        method: 'DELETE',
        headers: { 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-11-25' },
      }),
    );
    expect(res.status).toBe(200);
    expect(await counts()).toEqual({ ...none, abandoned: 1 });
  });

  test('an event stored while an async store replays is written nowhere and never replayed: stream_moved', async () => {
    // The SDK registers a resumed stream only after `await replayEventsAfter(...)`: with a store that answers over
    // the network (Redis, the fleet lab's shared store), an event sent during that await is stored, finds no
    // connection, and comes after what the replay read. The client's ids look continuous; only the server knows.
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    let replayRead!: () => void;
    const replayReadDone = new Promise<void>(resolve => (replayRead = resolve));
    let releaseReplay!: () => void;
    const slowStore = {
      getStreamIdForEventId: (id: string) => store.getStreamIdForEventId!(id),
      storeEvent: (streamId: string, message: unknown) => store.storeEvent(streamId, message),
      async replayEventsAfter(cursor: string, sink: { send(id: string, message: unknown): Promise<void> }) {
        const streamId = await store.replayEventsAfter(cursor, sink);
        replayRead();
        await new Promise<void>(resolve => (releaseReplay = resolve)); // the network round trip
        return streamId;
      },
    };
    const transport = transportWith(slowStore);
    const first = await transport.handleRequest(getRequest({}));
    await transport.send(notification(1));
    expect((await readFrames(first.body)).map(f => f.id)).toEqual(['1']); // then the connection drops
    await transport.send(notification(2));
    const resuming = transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    await replayReadDone;
    await transport.send(notification(3)); // during the replay's round trip
    releaseReplay();
    const resumed = await resuming;
    await transport.send(notification(4));
    const frames = (await readFrames(resumed.body, { count: 2 })).map(f => f.id);
    expect(frames).toEqual(['2', '4']); // 3 is lost, and 2 -> 4 is a gap no client can see in session-wide ids
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 1 });
  });

  /** A GET whose connection the test can drop, as the Node adapter (@hono/node-server) signals a premature close. */
  function droppableGet(headers: Record<string, string> = {}): { request: Request; drop(): void } {
    const connection = new AbortController();
    const plain = getRequest(headers);
    const request = new Request(plain, { signal: connection.signal });
    return { request, drop: () => connection.abort(new Error('Client connection prematurely closed.')) };
  }

  test('in flight: events written just before the client dropped the connection count stream_moved when it resumes elsewhere', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const get = droppableGet();
    const stream = await transport.handleRequest(get.request);
    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    expect((await readFrames(stream.body, { count: 3 })).length).toBe(3); // written to the wire
    get.drop(); // the proxy died with the bytes: the client resumes on another replica
    expect(delivery().pendingEvents(transport)).toBe(3);
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 3 });
  });

  test('no event store, in flight: events written just before the client dropped the connection are in_flight (exposure), never a loss', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(undefined);
    const get = droppableGet();
    const stream = await transport.handleRequest(get.request);
    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    expect((await readFrames(stream.body, { count: 3 })).length).toBe(3); // written to the wire
    get.drop(); // read or not: without ids the client cannot say, and nothing can replay them
    await fw.settle();
    expect(await counts()).toEqual({ ...none, in_flight: 3 });
    expect(delivery().pendingEvents(transport)).toBe(0);
    await transport.send(notification(4)); // sent while the client is away: nowhere to go
    await transport.handleRequest(ping());
    await waitUntil(() => delivery().streamsInWindow() === 0, { intervalMs: 20, what: 'the window to end' });
    await transport.handleRequest(ping()); // alive here past the window
    expect(await counts()).toEqual({ ...none, in_flight: 3, dropped: 1 });
  });

  test('no event store: a drop after a quiet stretch, and a DELETE, count nothing in flight', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(undefined);
    const get = droppableGet();
    const stream = await transport.handleRequest(get.request);
    await transport.send(notification(1));
    expect((await readFrames(stream.body, { count: 1 })).length).toBe(1);
    await new Promise(resolve => setTimeout(resolve, delivery().options.inflightMs + 50));
    get.drop();
    const again = droppableGet();
    const second = await transport.handleRequest(again.request);
    await transport.send(notification(2));
    expect((await readFrames(second.body, { count: 1 })).length).toBe(1);
    const res = await transport.handleRequest(
      new Request('http://127.0.0.1/mcp', {
        method: 'DELETE',
        headers: { 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-11-25' },
      }),
    );
    expect(res.status).toBe(200); // the server ends the stream: not a drop
    again.drop();
    await fw.settle();
    expect(await counts()).toEqual(none);
  });

  /** A store whose storeEvent answers only when released, as one across the network does (Redis in the fleet). */
  function heldStore() {
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    let held: (() => void)[] | undefined;
    return {
      hold: () => (held = []),
      release: () => {
        for (const answer of held ?? []) answer();
        held = undefined;
      },
      eventStore: {
        getStreamIdForEventId: (id: string) => store.getStreamIdForEventId!(id),
        replayEventsAfter: (cursor: string, sink: { send(id: string, message: unknown): Promise<void> }) =>
          store.replayEventsAfter(cursor, sink),
        storeEvent(streamId: string, message: unknown): Promise<string> {
          const stored = store.storeEvent(streamId, message);
          if (!held) return stored;
          const queue = held;
          return new Promise(resolve => queue.push(() => resolve(stored)));
        },
      },
    };
  }

  /**
   * Two events stored while the standalone stream was connected, whose store answers after the client dropped it:
   * the SDK then writes them nowhere. Returns once the store answered.
   */
  async function dropWhileStoring(
    held: ReturnType<typeof heldStore>,
    transport: { send(m: unknown): Promise<void>; handleRequest(r: Request): Promise<Response> },
  ) {
    const get = droppableGet();
    const stream = await transport.handleRequest(get.request);
    await transport.send(notification(1));
    held.hold();
    const sending = [transport.send(notification(2)), transport.send(notification(3))];
    expect((await readFrames(stream.body, { count: 1 })).map(f => f.id)).toEqual(['1']); // then it drops
    get.drop();
    held.release();
    await Promise.all(sending);
  }

  test('an async store answering after the drop: its events are in flight, and a resume here settles them', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const held = heldStore();
    const transport = transportWith(held.eventStore);
    await dropWhileStoring(held, transport);
    // 1 written just before the drop, 2 and 3 stored for the connection and never written.
    expect(delivery().pendingEvents(transport)).toBe(3);
    const resumed = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect((await readFrames(resumed.body, { count: 2 })).map(f => f.id)).toEqual(['2', '3']);
    await expectSettledAndSilent(transport);
  });

  test('an async store answering after the drop, and the client resumes elsewhere: stream_moved', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const held = heldStore();
    const transport = transportWith(held.eventStore);
    await dropWhileStoring(held, transport);
    await transport.handleRequest(ping());
    await talkAfterWindow(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 3 });
  });

  test('an async store answering while the stream is connected: every event written live, nothing pending', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const held = heldStore();
    const transport = transportWith(held.eventStore);
    const stream = await transport.handleRequest(getRequest({}));
    held.hold();
    const sending = [1, 2, 3, 4].map(n => transport.send(notification(n)));
    held.release();
    await Promise.all(sending);
    expect((await readFrames(stream.body, { count: 4 })).map(f => f.id)).toEqual(['1', '2', '3', '4']);
    expect(delivery().sessionsWithPending).toBe(0);
    await transport.handleRequest(ping());
    await transport.close();
    expect(await counts()).toEqual(none);
  });

  test('in flight: a resume here settles them, even when it replays nothing (the client had them all)', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    const get = droppableGet();
    const stream = await transport.handleRequest(get.request);
    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    await readFrames(stream.body, { count: 3 });
    get.drop();
    expect(delivery().pendingEvents(transport)).toBe(3);
    const resumed = await transport.handleRequest(getRequest({ 'last-event-id': '3' }));
    expect(resumed.status).toBe(200);
    await expectSettledAndSilent(transport);
  });

  test('in flight: a drop after a quiet stretch, a 409 duplicate GET, and a crash count nothing', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    const get = droppableGet();
    const stream = await transport.handleRequest(get.request);
    await transport.send(notification(1)); // written live (queued on the open stream)
    const duplicate = droppableGet();
    expect((await transport.handleRequest(duplicate.request)).status).toBe(409); // the stream is connected
    duplicate.drop(); // its answer was never a stream
    await new Promise(resolve => setTimeout(resolve, delivery().options.inflightMs + 50));
    // Idle for longer than anything stays in flight, then the connection drops (the adapter cancels the body and
    // aborts the request's signal).
    await stream.body!.cancel();
    get.drop();
    expect(delivery().pendingEvents(transport)).toBe(0);
    await transport.send(notification(2)); // then the client crashed: no request ever again
    await transport.close();
    expect(await counts()).toEqual({ ...none, abandoned: 1 });
  });

  test('a slow reconnect within the window and a resume after it, with no request between: nothing counted', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    const first = await transport.handleRequest(getRequest({}));
    await transport.send(notification(1));
    await readFrames(first.body, { count: 1 }); // then the connection drops
    await transport.send(notification(2));
    await transport.handleRequest(ping()); // the window starts
    await new Promise(resolve => setTimeout(resolve, WINDOW_MS / 2));
    const slow = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect((await readFrames(slow.body, { count: 1 })).map(f => f.id)).toEqual(['2']);
    await fw.settle();
    await transport.send(notification(3)); // dropped again
    const sweeps = delivery().sweeps;
    await waitUntil(() => delivery().sweeps >= sweeps + 3, { intervalMs: 20, what: 'sweeps past the window' });
    const late = await transport.handleRequest(getRequest({ 'last-event-id': '2' })); // the first sign of life
    expect((await readFrames(late.body, { count: 1 })).map(f => f.id)).toEqual(['3']);
    await fw.settle();
    await transport.handleRequest(ping());
    expect(delivery().sessionsWithPending).toBe(0);
    expect(await counts()).toEqual(none);
  });

  test('events written live count nothing, and nothing is pending', async () => {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const stream = await transport.handleRequest(getRequest({}));
    for (let n = 1; n <= 5; n++) await transport.send(notification(n));
    expect((await readFrames(stream.body)).length).toBe(5);
    expect(delivery().sessionsWithPending).toBe(0);
    await transport.close();
    expect(await counts()).toEqual(none);
  });
});
