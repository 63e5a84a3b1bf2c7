/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The server instrumentation in process, against the real web-standard transport of @modelcontextprotocol/sdk
 * 1.32.2 (the class that holds the logic from 1.25 on) and of @modelcontextprotocol/server 2.x, with real stores:
 * the SDK's own InMemoryEventStore and the lab's correct one.
 */
import { getEventListeners } from 'node:events';
import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, describe, expect, test } from 'vitest';
import { openReplayScopes } from '../../src/server/stacks/sdk/recording-event-store';
import { hashSessionId } from '../../src/shared/session-id';
import { ATTR, METRICS, PROBE_USER_AGENT, SPAN, SPAN_EVENT } from '../../src/shared/names';
import { PACKAGE_VERSION } from '../../src/shared/version';
import { sample } from '../support/lab';
import {
  type Forkwatch,
  LabEventStore,
  eventAttributes,
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
const { InMemoryEventStore } = req('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');

const resumes = METRICS.serverResumes.prometheusName;
const gap = METRICS.serverResumeGapEvents.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const t = { transport: 'streamable_http' };

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

const lines = [
  { label: '@modelcontextprotocol/sdk 1.32.2', module: v1 },
  { label: '@modelcontextprotocol/server 2.x', module: v2 },
];

describe.each(lines)('$label WebStandardStreamableHTTPServerTransport', ({ module }) => {
  const Transport = module.WebStandardStreamableHTTPServerTransport;
  const transportWith = (eventStore: unknown) =>
    hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore }));

  test('a correct store: replayed, and the gap is exactly the events replayed on the wire', async () => {
    fw = setupForkwatch({}, module);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const transport = transportWith(store);
    for (let n = 1; n <= 7; n++) await transport.send(notification(n));
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '2' }));
    const frames = await readFrames(res.body, { count: 5 });
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(res.status).toBe(200);
    expect(frames.map(f => f.id)).toEqual(['3', '4', '5', '6', '7']);
    const m = await fw.metrics();
    expect(sample(m, resumes, { ...t, outcome: 'replayed' })).toBe(1);
    for (const outcome of ['unknown_cursor', 'ignored', 'rejected', 'failed', 'probe_rejected'])
      expect(sample(m, resumes, { ...t, outcome })).toBe(0);
    expect(sample(m, `${gap}_count`)).toBe(1);
    expect(sample(m, `${gap}_sum`)).toBe(frames.length);
    expect(sample(m, events, t)).toBe(7);
    const [span] = fw.spans(SPAN.serverResume);
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    expect(eventAttributes(span!, SPAN_EVENT.resumeCursor)).toEqual({
      [ATTR.cursor]: '2',
      [ATTR.sessionHash]: hashSessionId('session-1'),
      [ATTR.mcpProtocolVersion]: '2025-11-25',
      [ATTR.eventStore]: true,
    });
    expect(eventAttributes(span!, SPAN_EVENT.replayDone)).toEqual({
      [ATTR.serverOutcome]: 'replayed',
      [ATTR.replayedEvents]: 5,
      [ATTR.replayStreamId]: '_GET_stream',
      [ATTR.httpStatusCode]: 200,
    });
  });

  test("the SDK's InMemoryEventStore on the very transport that stored the cursor: unknown_cursor (#943, #2560)", async () => {
    fw = setupForkwatch({}, module);
    const store = new InMemoryEventStore();
    const transport = transportWith(store);
    for (let n = 1; n <= 4; n++) await transport.send(notification(n));
    const [cursor] = [...store.events.keys()] as string[];
    expect(cursor).toMatch(/^_GET_stream_/);
    expect(store.events.has(cursor)).toBe(true); // the store holds it...
    const res = await transport.handleRequest(getRequest({ 'last-event-id': cursor! }));
    await res.body?.cancel();
    // ...and the client gets a healthy-looking, empty stream: 200, and the span says nothing was replayed (below).
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(res.status).toBe(200);
    const m = await fw.metrics();
    expect(sample(m, resumes, { ...t, outcome: 'unknown_cursor' })).toBe(1);
    expect(sample(m, `${gap}_count`) ?? 0).toBe(0); // an unknown cursor measures no gap (no series yet)
    const [span] = fw.spans(SPAN.serverResume);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(eventAttributes(span!, SPAN_EVENT.replayDone)).toMatchObject({
      [ATTR.serverOutcome]: 'unknown_cursor',
      [ATTR.replayedEvents]: 0,
      [ATTR.replayStreamId]: '',
    });
  });

  test("the same store replays a request stream (a UUID stream id) correctly: the bug is only '_GET_stream'", async () => {
    fw = setupForkwatch({}, module);
    const store = new InMemoryEventStore();
    const transport = transportWith(store);
    const streamId = '0d9a3a4e-5b1c-4d8e-9f00-1234567890ab';
    const ids: string[] = [];
    for (let n = 1; n <= 4; n++) {
      ids.push(await store.storeEvent(streamId, notification(n)));
      await new Promise(r => setTimeout(r, 2)); // the store orders by the ms timestamp in the id
    }
    // 2.x closes a replayed request stream whose request is over, after the replay: the events still went out.
    const res = await transport.handleRequest(getRequest({ 'last-event-id': ids[0]! }));
    const frames = await readFrames(res.body, { count: 3 });
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(frames.map(f => f.id)).toEqual(ids.slice(1));
    expect(eventAttributes(fw.spans(SPAN.serverResume)[0]!, SPAN_EVENT.replayDone)).toMatchObject({
      [ATTR.serverOutcome]: 'replayed',
      [ATTR.replayedEvents]: 3,
      [ATTR.replayStreamId]: streamId,
    });
  });

  test('no event store: ignored, and the fresh stream is the SDK’s own', async () => {
    fw = setupForkwatch({}, module);
    const transport = transportWith(undefined);
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '41' }));
    await transport.send(notification(1));
    const frames = await readFrames(res.body, { count: 1 });
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(res.status).toBe(200);
    expect(frames).toHaveLength(1);
    expect(frames[0]!.id).toBeUndefined();
    const m = await fw.metrics();
    expect(sample(m, resumes, { ...t, outcome: 'ignored' })).toBe(1);
    expect(sample(m, events, t)).toBe(1); // the event written on the fresh stream
    const [span] = fw.spans(SPAN.serverResume);
    expect(span!.attributes[ATTR.eventStore]).toBe(false);
    expect(eventAttributes(span!, SPAN_EVENT.replayDone)).toEqual({
      [ATTR.serverOutcome]: 'ignored',
      [ATTR.httpStatusCode]: 200,
    });
  });

  test('4xx from the transport: rejected (400 invalid event id, 404 other session, 409 stream connected)', async () => {
    fw = setupForkwatch({}, module);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const transport = transportWith(store);
    await transport.send(notification(1));
    const open = await transport.handleRequest(getRequest({})); // the standalone stream, still connected
    const statuses = [];
    for (const request of [
      getRequest({ 'last-event-id': '999' }),
      getRequest({ 'last-event-id': '1' }, 'some-other-session'),
      getRequest({ 'last-event-id': '1' }),
    ]) {
      const res = await transport.handleRequest(request);
      statuses.push(res.status);
      await res.body?.cancel();
    }
    await open.body?.cancel();
    await fw.waitForSpans(SPAN.serverResume, 3);
    expect(statuses).toEqual([400, 404, 409]);
    expect(sample(await fw.metrics(), resumes, { ...t, outcome: 'rejected' })).toBe(3);
    expect(fw.spans(SPAN.serverResume).map(s => s.attributes[ATTR.httpStatusCode])).toEqual([400, 404, 409]);
    expect(fw.spans(SPAN.serverResume).every(s => s.status.code === SpanStatusCode.ERROR)).toBe(true);
  });

  test("forkwatch probe's resumes (its User-Agent): refusals and unknown cursors are probe_rejected, replays still replayed", async () => {
    fw = setupForkwatch({}, module);
    const probe = { 'user-agent': `${PROBE_USER_AGENT}/${PACKAGE_VERSION}` };
    const validating = transportWith(new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' }));
    await validating.send(notification(1));
    await validating.send(notification(2));
    const forgiving = hydrate(new Transport({ eventStore: new InMemoryEventStore() }), 'session-2');
    const statuses = [];
    for (const [transport, request] of [
      [validating, getRequest({ ...probe, 'last-event-id': '999' })], // the probe's bogus cursor: 400
      [forgiving, getRequest({ ...probe, 'last-event-id': 'never_issued_x' }, 'session-2')], // 200, no log
      [validating, getRequest({ ...probe, 'last-event-id': '1' })], // the probe's real cursor: replayed
      [validating, getRequest({ 'user-agent': 'node', 'last-event-id': '998' })], // a real client: rejected
    ] as const) {
      const res = await transport.handleRequest(request);
      statuses.push(res.status);
      await res.body?.cancel();
    }
    await fw.waitForSpans(SPAN.serverResume, 4);
    expect(statuses).toEqual([400, 200, 200, 400]);
    const m = await fw.metrics();
    expect(sample(m, resumes, { ...t, outcome: 'probe_rejected' })).toBe(2);
    expect(sample(m, resumes, { ...t, outcome: 'replayed' })).toBe(1);
    expect(sample(m, resumes, { ...t, outcome: 'rejected' })).toBe(1);
    expect(sample(m, resumes, { ...t, outcome: 'unknown_cursor' })).toBe(0);
    // Deliberate refusals are not errors of the server; the real client's is.
    const codes = fw.spans(SPAN.serverResume).map(s => s.status.code);
    expect(codes).toEqual([SpanStatusCode.UNSET, SpanStatusCode.UNSET, SpanStatusCode.UNSET, SpanStatusCode.ERROR]);
  });

  test('a store that throws: failed, with the error type, and the SDK answers as it would (500)', async () => {
    fw = setupForkwatch({}, module);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'empty' });
    store.replayEventsAfter = async () => {
      throw new TypeError('store down');
    };
    const transport = transportWith(store);
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    await fw.waitForSpans(SPAN.serverResume, 1);
    expect(res.status).toBe(500);
    expect(sample(await fw.metrics(), resumes, { ...t, outcome: 'failed' })).toBe(1);
    const [span] = fw.spans(SPAN.serverResume);
    expect(eventAttributes(span!, SPAN_EVENT.replayDone)).toMatchObject({
      [ATTR.serverOutcome]: 'failed',
      [ATTR.errorType]: 'TypeError',
    });
  });

  test('events: stored events with a store, written events without one, never both', async () => {
    fw = setupForkwatch({}, module);
    const withStore = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const stream = await withStore.handleRequest(getRequest({}));
    for (let n = 1; n <= 3; n++) await withStore.send(notification(n)); // stored and written: counted once
    await withStore.send(notification(4));
    const withoutStore = transportWith(undefined);
    await withoutStore.send(notification(1)); // no stream, no store: dropped, counted once as an event produced
    const fresh = await withoutStore.handleRequest(getRequest({}));
    for (let n = 2; n <= 3; n++) await withoutStore.send(notification(n));
    expect((await readFrames(stream.body, { count: 4 })).length).toBe(4);
    expect((await readFrames(fresh.body, { count: 2 })).length).toBe(2);
    // Counted as each send wrote or stored (synchronously), so the 7 are final: 4 with the store, the dropped one,
    // and the 2 written on the fresh stream.
    expect(sample(await fw.metrics(), events, t)).toBe(7);
  });

  test("a fresh GET's drop watch listens from its stream's first event, not before; a resume's at once (issue 50)", async () => {
    fw = setupForkwatch({}, module);
    const abortListeners = (request: Request) => getEventListeners(request.signal, 'abort').length;
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const get = getRequest({});
    const res = await transport.handleRequest(get);
    expect(res.status).toBe(200);
    // Whatever the SDK itself listens to, forkwatch adds nothing until an event is stored for this connection.
    const sdkOwn = abortListeners(get);
    await transport.send(notification(1));
    expect(abortListeners(get)).toBe(sdkOwn + 1);
    await transport.send(notification(2));
    expect(abortListeners(get)).toBe(sdkOwn + 1);
    expect((await readFrames(res.body, { count: 2 })).map(f => f.id)).toEqual(['1', '2']);

    // A resume's connection may carry a replay's leftovers: its watch listens as soon as it is answered.
    const resume = getRequest({ 'last-event-id': '1' });
    const resumed = await transport.handleRequest(resume);
    expect(resumed.status).toBe(200);
    expect(abortListeners(resume)).toBe(sdkOwn + 1);
    await readFrames(resumed.body, { count: 1 });
  });
});

describe('recording wrapper', () => {
  const Transport = v1.WebStandardStreamableHTTPServerTransport;

  test('delegates exactly: same values, the store as `this`, getStreamIdForEventId only when the store has it', async () => {
    fw = setupForkwatch({}, v1);
    class PrivateStore {
      #events: { id: string; message: unknown }[] = [];
      readonly label = 'mine';
      last: Promise<string> | undefined;
      storeEvent(_streamId: string, message: unknown) {
        const id = String(this.#events.push({ id: String(this.#events.length + 1), message }));
        this.last = Promise.resolve(id);
        return this.last;
      }
      async replayEventsAfter(lastEventId: string, { send }: { send: (id: string, m: unknown) => Promise<void> }) {
        for (const e of this.#events.filter(e => Number(e.id) > Number(lastEventId))) await send(e.id, e.message);
        return '_GET_stream';
      }
      size() {
        return this.#events.length;
      }
    }
    const store = new PrivateStore();
    const transport = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: store }));
    await transport.send(notification(1));
    const wrapper = transport._eventStore;
    expect(wrapper).not.toBe(store);
    expect('getStreamIdForEventId' in wrapper).toBe(false);
    expect(wrapper.getStreamIdForEventId).toBeUndefined();
    expect(wrapper.storeEvent('x', {})).toBe(store.last); // the very promise the store returned
    expect(store.size()).toBe(2); // both calls ran on the store itself (its #private field)
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect((await readFrames(res.body, { count: 1 })).map(f => f.id)).toEqual(['2']);

    const validating = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const other = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: validating }));
    await other.send(notification(1));
    expect(typeof other._eventStore.getStreamIdForEventId).toBe('function');
    expect(await other._eventStore.getStreamIdForEventId('1')).toBe('_GET_stream');
  });

  test("every session's wrapper has one prototype, never its store: the SDK's store calls stay monomorphic", async () => {
    fw = setupForkwatch({}, v1);
    const wrappers = [];
    for (let n = 1; n <= 6; n++) {
      const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
      const transport = hydrate(new Transport({ sessionIdGenerator: () => `session-${n}`, eventStore: store }));
      await transport.send(notification(1));
      expect(transport._eventStore).not.toBe(store);
      expect(Object.getPrototypeOf(transport._eventStore)).not.toBe(store);
      wrappers.push(transport._eventStore);
    }
    // Object.create(store) gave each session a hidden class of its own (issue 27): one prototype for them all now.
    expect(new Set(wrappers.map(w => Object.getPrototypeOf(w))).size).toBe(1);
  });

  test('concurrent resumes on one transport keep their own counts', async () => {
    fw = setupForkwatch({}, v1);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'empty' });
    const slow = store.replayEventsAfter.bind(store);
    store.replayEventsAfter = async (cursor: string, { send }: { send: (id: string, m: unknown) => Promise<void> }) =>
      slow(cursor, {
        send: async (id: string, m: unknown) => {
          await new Promise(r => setTimeout(r, 5));
          return send(id, m);
        },
      });
    const transport = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: store }));
    for (let n = 1; n <= 6; n++) await transport.send(notification(n));
    // Two of them with the same cursor: the store calls carry only the cursor, and each resume gets its own.
    const answers = await Promise.all(
      ['1', '4', '1'].map(cursor => transport.handleRequest(getRequest({ 'last-event-id': cursor }))),
    );
    for (const answer of answers) await answer.body?.cancel();
    await fw.waitForSpans(SPAN.serverResume, 3);
    const byCursor = fw
      .spans(SPAN.serverResume)
      .map(
        s =>
          `${eventAttributes(s, SPAN_EVENT.resumeCursor)[ATTR.cursor]}:${eventAttributes(s, SPAN_EVENT.replayDone)[ATTR.replayedEvents]}`,
      )
      .sort();
    expect(byCursor).toEqual(['1:5', '1:5', '4:2']);
    expect(openReplayScopes(transport)).toBe(0);
  });
});
