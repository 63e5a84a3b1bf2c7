/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The server instrumentation on the old server path: `StreamableHTTPServerTransport` of @modelcontextprotocol/sdk
 * 1.24.3 (test/sdk-versions/v1.24), the full Node implementation, which writes 200 on the ServerResponse before it
 * replays. Driven over real HTTP on 127.0.0.1.
 */
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { ATTR, METRICS, SPAN, SPAN_EVENT } from '../../src/shared/names';
import { probeServerDelivery } from '../../src/server/server-delivery';
import { sample } from '../support/lab';
import { waitUntil } from '../support/prometheus';
import {
  type Forkwatch,
  LabEventStore,
  eventAttributes,
  hydrate,
  notification,
  readFrames,
  requireFrom,
  setupForkwatch,
  versionsDir,
} from './support';

const req = requireFrom(join(versionsDir, 'v1.24'));
// The SDK's exports map `./*` into dist/, so its package.json is read from beside dist/.
const sdkVersion: string = JSON.parse(
  readFileSync(
    req.resolve('@modelcontextprotocol/sdk/server/streamableHttp.js').replace(/dist[\\/]cjs[\\/].*$/, 'package.json'),
    'utf8',
  ),
).version;
const legacy = req('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { InMemoryEventStore } = req('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const Transport = legacy.StreamableHTTPServerTransport;

const resumes = METRICS.serverResumes.prometheusName;
const gap = METRICS.serverResumeGapEvents.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const t = { transport: 'streamable_http' };

let fw: Forkwatch | undefined;
let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise(r => (server ? server.close(r) : r(undefined)));
  server = undefined;
  await fw?.teardown();
  fw = undefined;
});

/** Serves one hydrated 1.24 transport over HTTP. */
async function serve(eventStore: unknown) {
  const transport = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore }));
  server = createServer((request, response) => void transport.handleRequest(request, response));
  await new Promise<void>(r => server!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  /** Opens a GET with these headers: its status once the head arrived, then its frames as the test expects them. */
  const open = async (headers: Record<string, string>, sessionId = 'session-1') => {
    const res = await fetch(url, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
        ...headers,
      },
    });
    return {
      status: res.status,
      /** Reads until `count` frames arrived (0: none awaited), then drops the connection, as a client drop does. */
      frames: (count: number) => readFrames(res.body, { count }),
    };
  };
  /** A POST the session needs no answer to: activity on this process. */
  const ping = () =>
    fetch(url, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-session-id': 'session-1',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }),
    }).then(r => r.status);
  /** GET with these headers; its first `count` frames read, then the connection dropped. */
  const get = async (headers: Record<string, string>, count = 0, sessionId = 'session-1') => {
    const stream = await open(headers, sessionId);
    return { status: stream.status, frames: await stream.frames(count) };
  };
  return { transport, get, open, ping };
}

describe(`@modelcontextprotocol/sdk ${sdkVersion} StreamableHTTPServerTransport (Node, before 1.25)`, () => {
  test('the app folder really holds 1.24', () => {
    expect(sdkVersion).toMatch(/^1\.24\./);
  });

  test('a correct store: replayed, and the gap is exactly the events replayed on the wire', async () => {
    fw = setupForkwatch({}, legacy);
    const { transport, get } = await serve(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    for (let n = 1; n <= 6; n++) await transport.send(notification(n));
    const { status, frames } = await get({ 'last-event-id': '2' }, 4);
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(status).toBe(200);
    expect(frames.map(f => f.id)).toEqual(['3', '4', '5', '6']);
    const m = await fw.metrics();
    expect(sample(m, resumes, { ...t, outcome: 'replayed' })).toBe(1);
    expect(sample(m, `${gap}_sum`)).toBe(4);
    expect(sample(m, events, t)).toBe(6);
    expect(eventAttributes(fw.spans(SPAN.serverResume)[0]!, SPAN_EVENT.replayDone)).toEqual({
      [ATTR.serverOutcome]: 'replayed',
      [ATTR.replayedEvents]: 4,
      [ATTR.replayStreamId]: '_GET_stream',
      [ATTR.httpStatusCode]: 200,
    });
  });

  test("the SDK's InMemoryEventStore on the transport that stored the cursor: unknown_cursor (#943, #2560)", async () => {
    fw = setupForkwatch({}, legacy);
    const store = new InMemoryEventStore();
    const { transport, get } = await serve(store);
    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    const cursor = [...store.events.keys()][0] as string;
    const { status } = await get({ 'last-event-id': cursor });
    // The span ends once the transport finished its answer: what it replayed is on it (the store found no stream for
    // its own cursor, so live events do not reach this stream either: keep-alives only).
    const [span] = await fw.waitForSpans(SPAN.serverResume, 1);
    expect(status).toBe(200);
    expect(eventAttributes(span!, SPAN_EVENT.replayDone)).toMatchObject({
      [ATTR.serverOutcome]: 'unknown_cursor',
      [ATTR.replayedEvents]: 0,
    });
    expect(sample(await fw.metrics(), resumes, { ...t, outcome: 'unknown_cursor' })).toBe(1);
  });

  test('no event store: ignored', async () => {
    fw = setupForkwatch({}, legacy);
    const { transport, open } = await serve(undefined);
    const resume = await open({ 'last-event-id': '7' });
    await fw.waitForSpans(SPAN.serverResume, 1); // the transport has taken the stream
    await transport.send(notification(1));
    const frames = await resume.frames(1);
    expect(resume.status).toBe(200);
    expect(frames.map(f => f.id)).toEqual([undefined]);
    const m = await fw.metrics();
    expect(sample(m, resumes, { ...t, outcome: 'ignored' })).toBe(1);
    expect(sample(m, events, t)).toBe(1);
  });

  test('4xx written by the transport: rejected (400, 404, 409)', async () => {
    fw = setupForkwatch({}, legacy);
    const { transport, get, open } = await serve(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    await transport.send(notification(1));
    const standalone = await open({}); // connected (its head arrived) and kept open meanwhile
    const statuses = [
      (await get({ 'last-event-id': '999' })).status,
      (await get({ 'last-event-id': '1' }, 0, 'another-session')).status,
      (await get({ 'last-event-id': '1' })).status,
    ];
    await fw.waitForSpans(SPAN.serverResume, 3);
    await standalone.frames(0);
    expect(standalone.status).toBe(200);
    expect(statuses).toEqual([400, 404, 409]);
    expect(sample(await fw.metrics(), resumes, { ...t, outcome: 'rejected' })).toBe(3);
    expect(fw.spans(SPAN.serverResume).map(s => s.attributes[ATTR.httpStatusCode])).toEqual([400, 404, 409]);
  });

  test('a store that throws after the 200 is written: failed, although the client saw 200', async () => {
    fw = setupForkwatch({}, legacy);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'empty' });
    store.replayEventsAfter = async () => {
      throw new RangeError('store down');
    };
    const errors: unknown[] = [];
    const { transport, get } = await serve(store);
    transport.onerror = (e: unknown) => errors.push(e);
    const { status } = await get({ 'last-event-id': '1' });
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(status).toBe(200);
    expect(errors).toHaveLength(1); // the SDK swallowed it after writing the head
    expect(sample(await fw.metrics(), resumes, { ...t, outcome: 'failed' })).toBe(1);
    expect(eventAttributes(fw.spans(SPAN.serverResume)[0]!, SPAN_EVENT.replayDone)).toMatchObject({
      [ATTR.serverOutcome]: 'failed',
      [ATTR.errorType]: 'RangeError',
      [ATTR.httpStatusCode]: 200,
    });
  });

  test('delivery ledger: standalone events stored after the GET stream dropped, session still active: stream_moved; a resume here: nothing', async () => {
    fw = setupForkwatch({ deliveryWindowMs: 150 }, legacy);
    const { transport, get, open, ping } = await serve(
      new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }),
    );
    const delivery = probeServerDelivery(fw.instrumentation.serverDelivery);
    const first = await open({});
    await waitUntil(() => transport._streamMapping.size > 0, { intervalMs: 5, what: 'the standalone stream' });
    await transport.send(notification(1));
    expect((await first.frames(1)).map(f => f.id)).toEqual(['1']);
    await waitUntil(() => transport._streamMapping.size === 0, { intervalMs: 5, what: 'the drop' });
    await transport.send(notification(2));
    expect(await ping()).toBe(202);
    // Event 1 was written just before the client dropped the connection (in flight), but event 2, stored after the
    // drop, is the firmer evidence: it alone counts.
    expect(delivery.pendingEvents(transport)).toBe(1);
    // A resume here replays what the client missed: everything settled.
    expect((await get({ 'last-event-id': '1' }, 1)).frames.map(f => f.id)).toEqual(['2']);
    await fw.settle();
    expect(delivery.pendingEvents(transport)).toBe(0);
    // Dropped again; this time the client never comes back here.
    await waitUntil(() => transport._streamMapping.size === 0, { intervalMs: 5, what: 'the second drop' });
    await transport.send(notification(3));
    await transport.send(notification(4));
    expect(await ping()).toBe(202);
    await waitUntil(() => delivery.streamsInWindow() === 0, { intervalMs: 20, what: 'the window to end' });
    expect(delivery.sessionsWithPending).toBe(1); // overdue: no proof yet that the client is alive
    expect(await ping()).toBe(202); // it is, and it did not come back here
    expect(delivery.sessionsWithPending).toBe(0);
    const m = await fw.metrics();
    const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
    expect(sample(m, undelivered, { ...t, reason: 'stream_moved' })).toBe(2);
    for (const reason of ['no_listener', 'dropped', 'abandoned'])
      expect(sample(m, undelivered, { ...t, reason })).toBe(0);
  });
});
