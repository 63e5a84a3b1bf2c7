/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * How the server instrumentation is installed and removed, and what it must never do: the target table and its
 * version ranges, the CommonJS hook, the 1.25+ Node wrapper left alone (no double count), a clean unpatch, no
 * exception into the SDK, silence for protocol 2026-07-28, the capture settings, and the trace the span joins.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Tracer, context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { isWrapped } from '@opentelemetry/instrumentation';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { ForkwatchInstrumentation } from '../../src/lifecycle/instrumentation';
import { ATTR, METRICS, SERVER_RESUME_OUTCOMES, SPAN, SPAN_EVENT } from '../../src/shared/names';
import { newReplayRecord } from '../../src/server/replay-record';
import { classifyServerResume } from '../../src/server/server-resume';
import { WEB_STANDARD_SERVER_METHODS } from '../../src/server/stacks/sdk/patch';
import {
  ALL_TARGETS,
  NODE_STREAMABLE_HTTP_SERVER,
  SDK_V1_FILES,
  SDK_V2_PACKAGES,
  WEB_STANDARD_STREAMABLE_HTTP_SERVER,
  versionSatisfies,
} from '../../src/lifecycle/targets';
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
  versionsDir,
} from './support';

const req = requireFrom();
const web = req('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const nodeWrapper = req('@modelcontextprotocol/sdk/server/streamableHttp.js');
const Transport = web.WebStandardStreamableHTTPServerTransport;
const resumes = METRICS.serverResumes.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const t = { transport: 'streamable_http' };

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

const transportWith = (eventStore: unknown) =>
  hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore }));

describe('targets', () => {
  test('SDK 1.x server files, each with the versions in which it holds the logic; 2.x server package', () => {
    const byFile = Object.fromEntries(SDK_V1_FILES.map(f => [f.file, f]));
    expect(byFile['server/streamableHttp.js']!.targets).toEqual([NODE_STREAMABLE_HTTP_SERVER]);
    expect(byFile['server/webStandardStreamableHttp.js']!.targets).toEqual([WEB_STANDARD_STREAMABLE_HTTP_SERVER]);
    const legacyRange = byFile['server/streamableHttp.js']!.versions!;
    const webRange = byFile['server/webStandardStreamableHttp.js']!.versions!;
    expect(['1.17.5', '1.24.3'].map(v => versionSatisfies(v, legacyRange))).toEqual([true, true]);
    expect(['1.25.0', '1.32.2'].map(v => versionSatisfies(v, legacyRange))).toEqual([false, false]);
    expect(['1.24.3', '1.25.0', '1.32.2', '2.0.0'].map(v => versionSatisfies(v, webRange))).toEqual([
      false,
      true,
      true,
      false,
    ]);
    // The 2025-era session transport, then the protocol 2026-07-28 per-request path.
    const [sessionTransport, ...perRequest] = SDK_V2_PACKAGES['@modelcontextprotocol/server']!;
    expect(sessionTransport).toBe(WEB_STANDARD_STREAMABLE_HTTP_SERVER);
    expect(perRequest.map(t => t.exportName)).toEqual([
      'PerRequestHTTPServerTransport',
      'Server',
      'McpServer',
      'InMemoryServerEventBus',
    ]);
    expect(ALL_TARGETS.map(x => x.exportName)).toEqual(
      expect.arrayContaining(['WebStandardStreamableHTTPServerTransport', 'StreamableHTTPServerTransport']),
    );
  });

  test('the CommonJS hook patches 1.24 and the 1.32.2 web-standard class, and leaves the 1.32.2 wrapper alone', () => {
    const instrumentation = new ForkwatchInstrumentation(); // enabled: hooks installed
    try {
      const legacy = requireFrom(join(versionsDir, 'v1.24'))('@modelcontextprotocol/sdk/server/streamableHttp.js');
      expect(isWrapped(legacy.StreamableHTTPServerTransport.prototype.handleGetRequest)).toBe(true);
      // Loaded before the instrumentation (at the top of this file): found in require.cache.
      expect(isWrapped(Transport.prototype.handleGetRequest)).toBe(true);
      expect(isWrapped(nodeWrapper.StreamableHTTPServerTransport.prototype.handleRequest)).toBe(false);
    } finally {
      instrumentation.disable();
    }
    expect(isWrapped(Transport.prototype.handleGetRequest)).toBe(false);
  });

  test('manual API: the 1.25+ Node wrapper is skipped, and a resume through it is counted once', async () => {
    fw = setupForkwatch({}, nodeWrapper, web);
    expect(isWrapped(nodeWrapper.StreamableHTTPServerTransport.prototype.handleRequest)).toBe(false);
    expect(isWrapped(Transport.prototype.handleGetRequest)).toBe(true);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const transport = hydrate(
      new nodeWrapper.StreamableHTTPServerTransport({ sessionIdGenerator: () => 'session-1', eventStore: store }),
    );
    const server = createServer((request, response) => void transport.handleRequest(request, response));
    await new Promise<void>(r => server.listen(0, '127.0.0.1', r));
    try {
      for (let n = 1; n <= 3; n++) await transport.send(notification(n));
      const abort = new AbortController();
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, {
        headers: { accept: 'text/event-stream', 'mcp-session-id': 'session-1', 'last-event-id': '1' },
        signal: abort.signal,
      });
      const frames = await readFrames(res.body, { count: 2 });
      abort.abort();
      await fw.waitForSpans(SPAN.serverResume, 1);
      expect(frames.map(f => f.id)).toEqual(['2', '3']);
      expect(sample(await fw.metrics(), resumes, { ...t, outcome: 'replayed' })).toBe(1);
      expect(fw.spans(SPAN.serverResume)).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      await new Promise(r => server.close(r));
    }
  });
});

describe('unpatch', () => {
  test('disable() restores every method, hands the store back, records nothing more; enable() again works', async () => {
    const originals = WEB_STANDARD_SERVER_METHODS.map(m => Transport.prototype[m]);
    fw = setupForkwatch({}, web);
    expect(WEB_STANDARD_SERVER_METHODS.every(m => isWrapped(Transport.prototype[m]))).toBe(true);
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const transport = transportWith(store);
    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    expect(transport._eventStore).not.toBe(store);

    fw.instrumentation.disable();
    expect(WEB_STANDARD_SERVER_METHODS.map(m => Transport.prototype[m])).toEqual(originals);
    await transport.send(notification(4));
    expect(transport._eventStore).toBe(store); // the wrapper stepped aside on its first call
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect((await readFrames(res.body, { count: 3 })).map(f => f.id)).toEqual(['2', '3', '4']); // the SDK works
    expect(transportWith(store)._eventStore).toBe(store);

    // Enabled again, a second resume is recorded: by then anything the disabled one recorded would show too.
    fw.instrumentation.enable();
    fw.instrumentation.manuallyInstrument(web);
    const again = await transport.handleRequest(getRequest({ 'last-event-id': '3' }));
    expect((await readFrames(again.body, { count: 1 })).map(f => f.id)).toEqual(['4']);
    const [span] = await fw.waitForSpans(SPAN.serverResume, 1);
    expect(fw.spans(SPAN.serverResume)).toHaveLength(1);
    expect(eventAttributes(span!, SPAN_EVENT.resumeCursor)[ATTR.cursor]).toBe('3');
    const m = await fw.metrics();
    expect(sample(m, events, t)).toBe(3); // notification 4 went by while disabled
    expect(sample(m, resumes, { ...t, outcome: 'replayed' })).toBe(1);
  });
});

describe('never in the way', () => {
  test('a tracer and counters that throw: the SDK answers exactly as without forkwatch, and nothing escapes', async () => {
    fw = setupForkwatch({}, web);
    const thrown = { span: 0, events: 0, resumes: 0 };
    const broken = {
      getTracer: () =>
        ({
          startSpan() {
            thrown.span++;
            throw new Error('tracer down');
          },
        }) as unknown as Tracer,
    };
    fw.instrumentation.setTracerProvider(broken);
    const counters = fw.instrumentation.instruments;
    counters.serverEvents.add = () => {
      thrown.events++;
      throw new Error('meter down');
    };
    counters.serverResumes.add = () => {
      thrown.resumes++;
      throw new Error('meter down');
    };
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const transport = transportWith(store);
    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    expect(res.status).toBe(200);
    expect((await readFrames(res.body)).map(f => f.id)).toEqual(['2', '3']);
    const noStore = transportWith(undefined);
    const fresh = await noStore.handleRequest(getRequest({ 'last-event-id': '1' }));
    await noStore.send(notification(1));
    expect((await readFrames(fresh.body, { count: 1 })).length).toBe(1);
    // A tracer that throws stops the resume before it is counted: with a working tracer, the counter throws next.
    fw.instrumentation.setTracerProvider(new BasicTracerProvider());
    const again = await transport.handleRequest(getRequest({ 'last-event-id': '2' }));
    expect(again.status).toBe(200);
    expect((await readFrames(again.body, { count: 1 })).map(f => f.id)).toEqual(['3']);
    // The broken parts were really called (and threw): the SDK's answers above are with them in place.
    expect(thrown.span).toBeGreaterThanOrEqual(1);
    expect(thrown.events).toBeGreaterThanOrEqual(3);
    await vi.waitFor(() => expect(thrown.resumes).toBe(1));
  });

  test('protocol 2026-07-28 has no resumability: no span, no resume, no events counted', async () => {
    fw = setupForkwatch({}, web);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    const res = await transport.handleRequest(
      getRequest({ 'last-event-id': '1', 'mcp-protocol-version': '2026-07-28' }),
    );
    await transport.send(notification(1));
    expect(res.status).toBe(400); // 1.32.2 does not speak 2026-07-28: its own answer, untouched
    // A control transport at 2025-11-25, after it, is recorded: the instrumentation was live all along.
    const control = hydrate(
      new Transport({ sessionIdGenerator: () => 'session-2', eventStore: new LabEventStore({ idFormat: 'integer' }) }),
      'session-2',
    );
    await control.send(notification(1));
    const answer = await control.handleRequest(getRequest({ 'last-event-id': '1' }, 'session-2'));
    await answer.body?.cancel();
    await fw.waitForSpans(SPAN.serverResume, 1);
    const m = await fw.metrics();
    expect(fw.spans(SPAN.serverResume)).toHaveLength(1);
    const counts = SERVER_RESUME_OUTCOMES.map(outcome => [outcome, sample(m, resumes, { ...t, outcome })]);
    expect(Object.fromEntries(counts)).toEqual({
      replayed: 1,
      unknown_cursor: 0,
      ignored: 0,
      rejected: 0,
      failed: 0,
      probe_rejected: 0,
      cross_session: 0,
      completed_stream: 0,
    });
    expect(sample(m, events, t)).toBe(1); // the control's notification only
  });

  test('captureEventIds: false keeps cursors off spans; captureRawSessionId: true adds mcp.session.id', async () => {
    fw = setupForkwatch({ captureEventIds: false, captureRawSessionId: true }, web);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    await transport.send(notification(1));
    const res = await transport.handleRequest(getRequest({ 'last-event-id': '1' }));
    await res.body?.cancel();
    const [span] = await fw.waitForSpans(SPAN.serverResume, 1);
    const cursorEvent = eventAttributes(span!, SPAN_EVENT.resumeCursor);
    expect(cursorEvent[ATTR.cursor]).toBeUndefined();
    expect(cursorEvent[ATTR.mcpSessionId]).toBe('session-1');
    expect(span!.attributes[ATTR.mcpSessionId]).toBe('session-1');
  });

  test('a long or control-character cursor is bounded and made printable on the span', async () => {
    fw = setupForkwatch({}, web);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer', unknownCursor: 'empty' }));
    const res = await transport.handleRequest(getRequest({ 'last-event-id': `x\u007f${'y'.repeat(600)}` }));
    await res.body?.cancel();
    await fw.waitForSpans(SPAN.serverResume, 1);
    const cursor = String(eventAttributes(fw.spans(SPAN.serverResume)[0]!, SPAN_EVENT.resumeCursor)[ATTR.cursor]);
    expect(cursor.startsWith('x\uFFFDyyy')).toBe(true);
    expect(cursor).toMatch(/…\(602 chars\)$/);
  });
});

describe('trace', () => {
  const contextManager = new AsyncLocalStorageContextManager();
  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  test('without an HTTP server span: the span continues the trace the client sent on the resume GET', async () => {
    fw = setupForkwatch({}, web);
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    await transport.send(notification(1));
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await transport.handleRequest(
      getRequest({ 'last-event-id': '1', traceparent: `00-${traceId}-b7ad6b7169203331-01` }),
    );
    await res.body?.cancel();
    const [span] = await fw.waitForSpans(SPAN.serverResume, 1);
    expect(span!.spanContext().traceId).toBe(traceId);
    expect(span!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
  });

  test('with an active span (HTTP server instrumentation): the span is its child, whatever the headers say', async () => {
    fw = setupForkwatch({}, web);
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
    const httpSpan = provider.getTracer('http').startSpan('GET /mcp');
    const transport = transportWith(new LabEventStore({ idFormat: 'integer' }));
    await transport.send(notification(1));
    const res = await context.with(trace.setSpan(context.active(), httpSpan), () =>
      transport.handleRequest(
        getRequest({ 'last-event-id': '1', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
      ),
    );
    await res.body?.cancel();
    httpSpan.end();
    const [span] = await fw.waitForSpans(SPAN.serverResume, 1);
    expect(span!.spanContext().traceId).toBe(httpSpan.spanContext().traceId);
    expect(span!.parentSpanContext?.spanId).toBe(httpSpan.spanContext().spanId);
  });
});

describe('classifyServerResume', () => {
  const record = (patch: Partial<ReturnType<typeof newReplayRecord>> = {}) => ({ ...newReplayRecord({}), ...patch });
  test.each([
    [
      'replayed',
      { hasEventStore: true, status: 200, record: record({ replayCalled: true, replayStreamId: '_GET_stream' }) },
    ],
    [
      'unknown_cursor',
      { hasEventStore: true, status: 200, record: record({ replayCalled: true, replayStreamId: '' }) },
    ],
    [
      'unknown_cursor',
      { hasEventStore: true, status: 200, record: record({ replayCalled: true, replayStreamId: undefined }) },
    ],
    ['ignored', { hasEventStore: false, status: 200, record: record() }],
    ['rejected', { hasEventStore: true, status: 400, record: record({ lookupCalled: true }) }],
    ['rejected', { hasEventStore: false, status: 409, record: record() }],
    ['failed', { hasEventStore: true, status: 500, record: record() }],
    ['failed', { hasEventStore: true, status: 200, record: record({ replayCalled: true, storeFailed: true }) }],
    ['failed', { hasEventStore: true, status: undefined, record: record({ lookupCalled: true, storeFailed: true }) }],
  ] as const)('%s', (outcome, input) => {
    expect(classifyServerResume(input)).toBe(outcome);
  });
});
