/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger when a resume's replay misses an event (the SDK registers a resumed stream only after `await
 * replayEventsAfter(...)`, typescript-sdk #2558, so with an asynchronous store an event stored during that await is
 * written nowhere) and the resumed stream then stays open here, quiet. The client's cursor is still before that
 * event: it is not lost until a later event is written live on the stream (the cursor moves past it), and the next
 * replay of the stream here re-sends it. Real web-standard transports (SDK 1.32.2 and server 2.x), an asynchronous
 * store, a short window.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { METRICS, SERVER_UNDELIVERED_REASONS } from '../../src/shared/names';
import { probeServerDelivery } from '../../src/server/server-delivery';
import { sample } from '../support/lab';
import {
  type Forkwatch,
  LabEventStore,
  getRequest,
  hydrate,
  notification,
  parseFrames,
  requireFrom,
  setupForkwatch,
} from './support';

const req = requireFrom();
const v1 = req('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const v2 = req('@modelcontextprotocol/server');

const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const WINDOW_MS = 150;
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

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

/** An SSE GET the test reads frame by frame while it stays open, and drops as a proxy's idle cut does. */
function openGet(headers: Record<string, string> = {}) {
  const connection = new AbortController();
  const request = new Request(getRequest(headers), { signal: connection.signal });
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let text = '';
  const decoder = new TextDecoder();
  return {
    request,
    /** Reads until `count` more frames arrived (bounded), keeping the stream open. */
    async frames(response: Response, count: number): Promise<string[]> {
      reader ??= response.body!.getReader();
      const before = parseFrames(text).length;
      const deadline = Date.now() + 5000;
      while (parseFrames(text).length < before + count && Date.now() < deadline) {
        const next = await Promise.race([reader.read(), sleep(deadline - Date.now()).then(() => undefined)]);
        if (!next || next.done) break;
        text += decoder.decode(next.value, { stream: true });
      }
      return parseFrames(text)
        .slice(before)
        .map(f => f.id ?? '');
    },
    /** The connection dies: the body is cancelled and the request's signal aborts (the Node adapter does both). */
    async drop() {
      await reader?.cancel().catch(() => {});
      connection.abort(new Error('Client connection prematurely closed.'));
    },
  };
}

describe.each([
  { label: '@modelcontextprotocol/sdk 1.32.2', module: v1 },
  { label: '@modelcontextprotocol/server 2.x', module: v2 },
])('$label: an event a replay missed, behind a quiet resumed stream', ({ module }) => {
  const Transport = module.WebStandardStreamableHTTPServerTransport;

  /** A store whose first replay waits for the test after reading (the network round trip). */
  function slowFirstReplay() {
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    let replays = 0;
    let replayRead!: () => void;
    const read = new Promise<void>(resolve => (replayRead = resolve));
    let release!: () => void;
    const released = new Promise<void>(resolve => (release = resolve));
    const eventStore = {
      getStreamIdForEventId: (id: string) => store.getStreamIdForEventId!(id),
      storeEvent: (streamId: string, message: unknown) => store.storeEvent(streamId, message),
      async replayEventsAfter(cursor: string, sink: { send(id: string, message: unknown): Promise<void> }) {
        const streamId = await store.replayEventsAfter(cursor, sink);
        if (replays++ === 0) {
          replayRead();
          await released;
        }
        return streamId;
      },
    };
    return { eventStore, read, release };
  }

  /** Stream 1 delivered, dropped; 2 stored while away; a resume from 1 whose replay (2) misses 3. */
  async function missedByReplay() {
    fw = setupForkwatch({ deliveryWindowMs: WINDOW_MS }, module);
    const slow = slowFirstReplay();
    const transport = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: slow.eventStore }));
    const first = openGet();
    const firstResponse = await transport.handleRequest(first.request);
    await transport.send(notification(1));
    expect(await first.frames(firstResponse, 1)).toEqual(['1']);
    await first.drop();
    await transport.send(notification(2));
    const resume = openGet({ 'last-event-id': '1' });
    const resuming = transport.handleRequest(resume.request);
    await slow.read;
    await transport.send(notification(3)); // during the replay's round trip: stored, written nowhere
    slow.release();
    const resumed = await resuming;
    expect(await resume.frames(resumed, 1)).toEqual(['2']);
    await fw.settle();
    expect(probeServerDelivery(fw.instrumentation.serverDelivery).pendingEvents(transport)).toBe(1);
    return { transport, resume, resumed };
  }

  /** The session keeps talking here for three windows: proof of life, again and again. */
  async function talkForWindows(transport: { handleRequest(req: Request): Promise<Response> }) {
    for (let i = 0; i < 4; i++) {
      expect((await transport.handleRequest(ping())).status).toBe(202);
      await sleep(WINDOW_MS);
    }
  }

  test('the stream stays open and quiet past the window: not counted; the next replay here delivers it, and settles it', async () => {
    const { transport, resume } = await missedByReplay();
    await talkForWindows(transport);
    // The client is listening here, its cursor (2) is before 3: nothing is lost yet.
    expect(await counts()).toEqual(none);
    // The proxy cuts the idle stream; the client resumes from its cursor, here, and gets 3.
    await resume.drop();
    const again = openGet({ 'last-event-id': '2' });
    const replayed = await transport.handleRequest(again.request);
    expect(await again.frames(replayed, 1)).toEqual(['3']);
    await fw!.settle();
    expect(probeServerDelivery(fw!.instrumentation.serverDelivery).pendingEvents(transport)).toBe(0);
    await talkForWindows(transport);
    expect(await counts()).toEqual(none); // every event reached the client exactly once: 1, 2, 3
  });

  test('a later event written live on that stream moves the cursor past it: stream_moved once the window ends', async () => {
    const { transport, resume, resumed } = await missedByReplay();
    await transport.send(notification(4));
    expect(await resume.frames(resumed, 1)).toEqual(['4']); // 2 -> 4: the client can no longer get 3
    await talkForWindows(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 1 });
  });

  test('the stream is dropped and the client never comes back here for it: stream_moved once the window ends', async () => {
    const { transport, resume } = await missedByReplay();
    await resume.drop();
    await talkForWindows(transport);
    expect(await counts()).toEqual({ ...none, stream_moved: 1 });
  });
});
