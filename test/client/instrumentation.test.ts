/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * ForkwatchInstrumentation in-process, with the real SDK client, the real OpenTelemetry SDK (in-memory spans,
 * the Prometheus exporter's own serialisation) and a scripted SSE server on 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import * as diagnosticsChannel from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import * as streamableHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { DiagLogLevel, type DiagLogger, diag } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  ForkwatchInstrumentation,
  type ForkwatchInstrumentationConfig,
  type ResumeVerdictInfo,
  StreamForkDetected,
} from '../../src';
import { heldClaims } from '../../src/client/observer/patched-transport-scope';
import { undiciPublishesBodyChunks } from '../../src/client/wire/undici-version';
import { METRICS, labelCombinations } from '../../src/shared/names';
import { sample } from '../support/lab';
import { type ScriptedServer, frame, openSse, startScriptedServer } from '../support/scripted-mcp-server';

const { StreamableHTTPClientTransport } = streamableHttp;
/** A transport method as the prototype holds it: shimmer marks a wrapper with `__wrapped` and `__original`. */
type TransportMethod = ((this: unknown, ...args: unknown[]) => unknown) & {
  __wrapped?: boolean;
  __original?: TransportMethod;
};
const proto = StreamableHTTPClientTransport.prototype as unknown as Record<string, TransportMethod> & {
  _handleSseStream: TransportMethod;
};
const originalHandleSseStream = proto._handleSseStream;
const spans = new InMemorySpanExporter();
const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
tracerProvider.register();

const warnings: string[] = [];
const capture = (...args: unknown[]) => warnings.push(args.map(String).join(' '));
const captureDiag: DiagLogger = {
  error: capture,
  warn: capture,
  info: () => {},
  debug: () => {},
  verbose: () => {},
};
diag.setLogger(captureDiag, DiagLogLevel.WARN);

let server: ScriptedServer;
let exporter: PrometheusExporter;
let meterProvider: MeterProvider;
let instrumentation: ForkwatchInstrumentation;
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

function instrument(config: ForkwatchInstrumentationConfig = {}) {
  instrumentation = new ForkwatchInstrumentation({ verdictTimeoutMs: 3000, ...config });
  instrumentation.setTracerProvider(tracerProvider);
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.manuallyInstrument(streamableHttp);
  return instrumentation;
}

async function scrape() {
  const { resourceMetrics } = await exporter.collect();
  return new PrometheusSerializer().serialize(resourceMetrics);
}

async function waitFor<T>(what: string, fn: () => T | undefined, ms = 4000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const openClients: Client[] = [];

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    reconnectionOptions: {
      initialReconnectionDelay: 30,
      maxReconnectionDelay: 60,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 1,
    },
  });
  const client = new Client({ name: 'instrumentation-test', version: '1.0.0' });
  const received: number[] = [];
  const errors: Error[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
    received.push((n.params.data as { n: number }).n);
  });
  client.onerror = e => errors.push(e);
  openClients.push(client);
  await client.connect(transport);
  return { transport, client, received, errors };
}

/** The first GET streams `frames` then drops the connection; the resume GET plays `resume`. */
function dropThenResume(frames: string, resume: (res: ServerResponse) => void) {
  server.scripts.push(
    res => {
      openSse(res);
      res.write(frames);
      setTimeout(() => res.socket?.destroy(), 30);
    },
    res => resume(res),
  );
}

beforeEach(async () => {
  server = await startScriptedServer();
  exporter = new PrometheusExporter({ preventServerStart: true });
  meterProvider = new MeterProvider({ readers: [exporter] });
  spans.reset();
  warnings.length = 0;
});

afterEach(async () => {
  // A failed test must not leave a client reconnecting into the next one.
  await Promise.all(openClients.splice(0).map(c => c.close().catch(() => {})));
  instrumentation?.disable();
  await server.close();
  await meterProvider.shutdown();
});

describe('verdicts in-process', () => {
  test('the textbook fork: cursor 4821, first id 1 is forked, id_regressed; trace context rides on the resume GET', async () => {
    instrument();
    dropThenResume(frame('4820', 1) + frame('4821', 2), res => {
      openSse(res);
      res.write(frame('1', 3));
    });
    const app = await connect();
    await waitFor('the forked frame', () => app.received.includes(3));
    expect(server.gets[1]!['last-event-id']).toBe('4821');
    await waitFor('the span', () => spans.getFinishedSpans().length === 1);
    const span = spans.getFinishedSpans()[0]!;
    expect(span.attributes['forkwatch.resume.reason']).toBe('id_regressed');
    expect(server.gets[1]!.traceparent).toContain(span.spanContext().traceId);
    expect(server.gets[0]!.traceparent).toBeUndefined(); // only resume GETs carry it
    const text = await scrape();
    expect(
      sample(text, METRICS.clientForks.prometheusName, { transport: 'streamable_http', reason: 'id_regressed' }),
    ).toBe(1);
    expect(sample(text, `${METRICS.clientResumeGapSeconds.prometheusName}_count`)).toBe(1);
    expect(app.received).toEqual([1, 2, 3]); // record mode: the SDK still gets every frame
    await app.client.close();
  });

  test("with the fetch observer on, a patched transport's resume is judged once, and no claim outlives its GET", async () => {
    instrument({ observeFetch: true });
    // The wire observer: undici's channels on every line (the chunks' only while an exchange is watched), and a
    // wrapper of fetch where the runtime's undici publishes no body chunks (Node 22).
    expect(diagnosticsChannel.channel('undici:request:bodyChunkReceived').hasSubscribers).toBe(false);
    expect(diagnosticsChannel.channel('undici:request:create').hasSubscribers).toBe(true);
    expect(
      (globalThis.fetch as unknown as Record<symbol, unknown>)[Symbol.for('forkwatch.fetch-observer')] === true,
    ).toBe(!undiciPublishesBodyChunks(process.versions.undici));
    dropThenResume(frame('7', 1), res => {
      openSse(res);
      res.write(frame('8', 2));
    });
    const app = await connect();
    await waitFor('the resumed frame', () => app.received.includes(2));
    await waitFor('the span', () => spans.getFinishedSpans().length === 1);
    await sleep(100);
    expect(spans.getFinishedSpans()).toHaveLength(1);
    const text = await scrape();
    expect(
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome: 'resumed' }),
    ).toBe(1);
    // Both GETs (the first and the resume) have settled: their claims are released.
    expect(heldClaims()).toBe(0);
    await app.client.close();
  });

  test('a contiguous dense sequence is resumed with 0 skipped events; a gap of 3 is measured', async () => {
    instrument();
    // Two live events one apart: the ids are seen dense (a lone integer could be a global counter's).
    dropThenResume(frame('6', 0) + frame('7', 1), res => {
      openSse(res);
      res.write(frame('8', 2));
    });
    const app = await connect();
    await waitFor('the resumed frame', () => app.received.includes(2));
    await waitFor('the span', () => spans.getFinishedSpans().length === 1);
    const text = await scrape();
    expect(sample(text, `${METRICS.clientResumeSkippedEvents.prometheusName}_bucket`, { le: '0' })).toBe(1);
    expect(
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome: 'resumed' }),
    ).toBe(1);
    await app.client.close();
  });

  test('comments and id-less frames before the first frame: the first dispatched frame decides (id_missing)', async () => {
    instrument();
    dropThenResume(frame('a-1', 1), res => {
      openSse(res);
      res.write(': keepalive\n\n');
      res.write('retry: 1000\n\n');
      res.write(frame(undefined, 2));
    });
    const app = await connect();
    await waitFor('the frame', () => app.received.includes(2));
    await waitFor('the span', () => spans.getFinishedSpans().length === 1);
    expect(spans.getFinishedSpans()[0]!.attributes['forkwatch.resume.reason']).toBe('id_missing');
    await app.client.close();
  });

  test('a silent resumed stream is inconclusive at the configured verdict timeout', async () => {
    instrument({ verdictTimeoutMs: 150 });
    dropThenResume(frame('s_1700000000000_aaaa', 1), res => {
      openSse(res);
      res.write(': keepalive\n\n');
    });
    const app = await connect();
    // Waits at most 9 s: the default verdict timeout (10 s) would miss it, whatever the machine's load.
    await waitFor('the span', () => spans.getFinishedSpans().length === 1, 9000);
    const durationMs = hrTimeToMilliseconds(spans.getFinishedSpans()[0]!.duration);
    process.stderr.write(`inconclusive after ${durationMs.toFixed(0)} ms (verdictTimeoutMs 150)\n`);
    expect(durationMs).toBeGreaterThanOrEqual(150);
    const first = spans.getFinishedSpans()[0]!.events.find(e => e.name === 'forkwatch.resume.first_frame')!;
    expect(first.attributes).toMatchObject({
      'forkwatch.resume.outcome': 'inconclusive',
      'forkwatch.resume.reason': 'timeout',
    });
    await app.client.close();
  });

  test('a huge cursor: the resume is rejected by the server (431) and spans stay bounded', async () => {
    instrument();
    const huge = 'x'.repeat(1 << 20);
    dropThenResume(frame(huge, 1), () => {
      throw new Error('the server never sees a 1 MB header');
    });
    const app = await connect();
    await waitFor('the span', () => spans.getFinishedSpans().length >= 1, 6000);
    const span = spans.getFinishedSpans()[0]!;
    expect(span.attributes['forkwatch.resume.outcome']).toBe('rejected');
    expect(span.attributes['http.response.status_code']).toBe(431);
    const cursor = String(span.events[0]!.attributes!['forkwatch.resume.cursor']);
    expect(cursor.length).toBeLessThan(400);
    expect(app.received).toEqual([1]);
    await app.client.close();
  });
});

describe('the hot path: a body is wrapped only while a verdict needs it', () => {
  test("fresh streams reach the SDK untouched; ids come from the SDK's own callback, once each, across reconnects", async () => {
    // Spies around forkwatch's wrapper: what the SDK hands it (over), and what it hands the SDK's own method (under).
    const over: unknown[] = [];
    const under: unknown[] = [];
    proto._handleSseStream = function (this: unknown, stream: unknown, ...rest: unknown[]) {
      under.push(stream);
      return originalHandleSseStream.call(this, stream, ...rest);
    };
    try {
      instrument();
      const patched = proto._handleSseStream;
      proto._handleSseStream = function (this: unknown, stream: unknown, ...rest: unknown[]) {
        over.push(stream);
        return patched.call(this, stream, ...rest);
      };
      dropThenResume(frame('7', 1) + frame('8', 2), res => {
        openSse(res);
        // The resume: 9 is new, 8 was consumed before the drop (a duplicate), then 10.
        res.write(frame('9', 3) + frame('8', 2) + frame('10', 4));
      });
      server.scripts.push(res => {
        openSse(res);
        res.write(frame('11', 5) + frame('12', 6));
      });
      const app = await connect();
      await waitFor('the resumed frames', () => app.received.includes(4));
      await waitFor('the span', () => spans.getFinishedSpans().length === 1);
      // The app resumes a stream itself, with its own callback: it hears each id once, as without forkwatch.
      const tokens: string[] = [];
      await app.transport.resumeStream('10', { onresumptiontoken: id => tokens.push(id) });
      await waitFor('the app-resumed frames', () => app.received.includes(6));
      expect(tokens).toEqual(['11', '12']);
      // The first GET's body went through as it came; the resume's was observed for its verdict.
      expect(over).toHaveLength(3);
      expect(under[0]).toBe(over[0]);
      expect(under[1]).not.toBe(over[1]);
      const text = await scrape();
      const transport = { transport: 'streamable_http' };
      expect(sample(text, METRICS.clientDuplicateEvents.prometheusName, transport)).toBe(1);
      // The SDK's reconnect and the app's own resume: both resumed.
      expect(sample(text, METRICS.clientResumes.prometheusName, { ...transport, outcome: 'resumed' })).toBe(2);
      expect(app.received).toEqual([1, 2, 3, 2, 4, 5, 6]);
      await app.client.close();
    } finally {
      instrumentation.disable();
      proto._handleSseStream = originalHandleSseStream;
    }
  });

  test("an app's onresumptiontoken that throws, or is not a function, fails as it does without forkwatch", async () => {
    /** What the app sees when it resumes with this callback: the transport's errors and the notifications. */
    async function resumeWith(onresumptiontoken: unknown) {
      const getsBefore = server.gets.length;
      const app = await connect();
      await waitFor('the standalone GET', () => server.gets.length > getsBefore);
      server.scripts.push(res => {
        openSse(res);
        res.write(frame('11', 5) + frame('12', 6));
      });
      await app.transport.resumeStream('10', { onresumptiontoken: onresumptiontoken as (id: string) => void });
      await waitFor('the callback error', () => app.errors.length > 0);
      await sleep(100);
      await app.client.close();
      return { errors: app.errors.map(e => e.message), received: app.received };
    }
    const throwing = () => {
      throw new Error('the app callback failed');
    };
    const bare = [await resumeWith(throwing), await resumeWith('not a function')];
    expect(bare[0]!.errors[0]).toContain('the app callback failed');
    expect(bare[1]!.errors[0]).toContain('is not a function');
    try {
      instrument();
      expect([await resumeWith(throwing), await resumeWith('not a function')]).toEqual(bare);
    } finally {
      instrumentation.disable();
    }
  });
});

describe('fail-loud mode (onFork: abort), as the README shows it', () => {
  test("the README's onerror sample gets a StreamForkDetected with the verdict; the forked stream is cancelled", async () => {
    instrument({ onFork: 'abort' });
    let resumeClosed!: () => void;
    const closed = new Promise<void>(resolve => (resumeClosed = resolve));
    dropThenResume(frame('4820', 1) + frame('4821', 2), res => {
      openSse(res);
      res.on('close', () => resumeClosed()); // the client went away: the stream was cancelled
      res.write(frame('1', 3) + frame('2', 4));
    });
    const app = await connect();
    const verdicts: ResumeVerdictInfo[] = [];
    const reconnectWithNewSession = (verdict: ResumeVerdictInfo) => verdicts.push(verdict);
    // The README's sample, as written there:
    app.client.onerror = error => {
      if (error instanceof StreamForkDetected) reconnectWithNewSession(error.verdict);
    };
    await waitFor('the verdict in onerror', () => verdicts.length === 1);
    expect(verdicts[0]).toMatchObject({
      side: 'client',
      transport: 'streamable_http',
      outcome: 'forked',
      reason: 'id_regressed',
    });
    expect(verdicts[0]).toMatchObject({ cursor: '4821', firstEventId: '1', sessionId: 'session-under-test' });
    await closed;
    expect(server.gets[1]!['last-event-id']).toBe('4821');
    expect(app.received).toEqual([1, 2]); // the forked frames never reached the SDK's handlers
    await app.client.close();
  });

  test('StreamForkDetected is one class for CommonJS and ESM users of the package (plain Node, the built entries)', () => {
    // In plain Node, not through vitest's module loader: the check is about how Node links the two entries.
    require('../../lab/fresh-build.cjs').assertFreshBuild(); // never an old build/ by accident
    const script = [
      `import { createRequire } from 'node:module';`,
      `import * as esm from ${JSON.stringify(join(__dirname, '../../build/esm/index.mjs'))};`,
      `const cjs = createRequire(import.meta.url)(${JSON.stringify(join(__dirname, '../../build/src/index.js'))});`,
      `const error = new cjs.StreamForkDetected({ side: 'client', transport: 'streamable_http', outcome: 'forked' });`,
      `process.stdout.write(JSON.stringify([typeof esm.StreamForkDetected, esm.StreamForkDetected === cjs.StreamForkDetected, error instanceof esm.StreamForkDetected]));`,
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual(['function', true, true]);
  });
});

describe('configuration and privacy', () => {
  test('session ids are hashed; raw ids and event ids follow their switches', async () => {
    instrument({ captureEventIds: false });
    dropThenResume(frame('1', 1), res => {
      openSse(res);
      res.write(frame('2', 2));
    });
    const app = await connect();
    await waitFor('the span', () => spans.getFinishedSpans().length === 1);
    const [span] = spans.getFinishedSpans();
    const all = [span!.attributes, ...span!.events.map(e => e.attributes ?? {})];
    expect(all.some(a => 'forkwatch.resume.cursor' in a || 'forkwatch.resume.first_event_id' in a)).toBe(false);
    expect(span!.attributes['forkwatch.session.hash']).toMatch(/^[0-9a-f]{16}$/);
    expect(span!.attributes['mcp.session.id']).toBeUndefined();
    await app.client.close();

    instrumentation.disable();
    spans.reset();
    instrument({ captureRawSessionId: true });
    dropThenResume(frame('1', 1), res => {
      openSse(res);
      res.write(frame('2', 2));
    });
    const again = await connect();
    await waitFor('the span', () => spans.getFinishedSpans().length === 1);
    expect(spans.getFinishedSpans()[0]!.attributes['mcp.session.id']).toBe('session-under-test');
    await again.client.close();
  });

  test('bad settings get a diagnostic and safe defaults', () => {
    const i = instrument({
      codec: 'nope' as unknown as ForkwatchInstrumentationConfig['codec'],
      verdictTimeoutMs: -5,
      onFork: 'explode' as unknown as ForkwatchInstrumentationConfig['onFork'],
    });
    expect(i.settings).toMatchObject({ verdictTimeoutMs: 10_000, onFork: 'record' });
    expect(i.settings.codec.name).toBe('auto');
    expect(warnings.join('\n')).toMatch(/unknown codec/);
    expect(warnings.join('\n')).toMatch(/invalid verdictTimeoutMs/);
    expect(warnings.join('\n')).toMatch(/invalid onFork/);
  });

  test('a throwing onForkDetected hook is contained: the app keeps its frames', async () => {
    instrument({
      onForkDetected: () => {
        throw new Error('user hook bug');
      },
    });
    dropThenResume(frame('9', 1), res => {
      openSse(res);
      res.write(frame('1', 2) + frame('2', 3));
    });
    const app = await connect();
    await waitFor('all frames', () => app.received.length === 3);
    expect(app.received).toEqual([1, 2, 3]);
    expect(warnings.join('\n')).toMatch(/onForkDetected hook threw/);
    await app.client.close();
  });

  test('sessions negotiated at 2026-07-28 are left alone', async () => {
    instrument();
    dropThenResume(frame('5', 1), res => {
      openSse(res);
      res.write(frame('1', 2));
    });
    const app = await connect();
    app.transport.setProtocolVersion('2026-07-28');
    await waitFor('the second GET', () => server.gets.length >= 2 && app.received.includes(2));
    await app.client.close();
    // A control session at the current protocol, after it: its resume is recorded, so the instrumentation was live
    // and had every chance to record the first one (whose first frame, id 1 after cursor 5, would be a fork).
    dropThenResume(frame('5', 1), res => {
      openSse(res);
      res.write(frame('6', 2));
    });
    const control = await connect();
    await waitFor('the control span', () => spans.getFinishedSpans().length >= 1);
    expect(spans.getFinishedSpans().map(s => s.attributes['forkwatch.resume.outcome'])).toEqual(['resumed']);
    const text = await scrape();
    const count = (outcome: string) =>
      sample(text, METRICS.clientResumes.prometheusName, { transport: 'streamable_http', outcome });
    expect(['resumed', 'forked', 'inconclusive'].map(count)).toEqual([1, 0, 0]);
    await control.client.close();
  });
});

describe('metrics contract', () => {
  test('every counter label combination is exported at 0 from the start', async () => {
    instrument();
    const text = await scrape();
    for (const spec of Object.values(METRICS)) {
      if (spec.kind !== 'counter') continue;
      for (const labels of labelCombinations(spec)) expect(sample(text, spec.prometheusName, labels)).toBe(0);
    }
  });
});

describe('patching', () => {
  test('disable() restores the SDK methods; enable() patches again', () => {
    instrument();
    expect(proto._handleSseStream.__wrapped).toBe(true);
    instrumentation.disable();
    expect(proto._handleSseStream).toBe(originalHandleSseStream);
    for (const m of ['_startOrAuthSse', '_scheduleReconnection', '_commonHeaders'])
      expect(proto[m]!.__wrapped).toBeUndefined();
    instrumentation.enable();
    instrumentation.manuallyInstrument(streamableHttp);
    expect(proto._handleSseStream.__wrapped).toBe(true);
  });

  test('a second instrumentation does not patch twice: one resume is counted once', async () => {
    instrument();
    const second = new ForkwatchInstrumentation();
    second.manuallyInstrument(streamableHttp);
    expect(proto._handleSseStream.__original).toBe(originalHandleSseStream);
    dropThenResume(frame('3', 1), res => {
      openSse(res);
      res.write(frame('4', 2));
    });
    const app = await connect();
    // The frame reached the app: every wrapper around the SDK's stream has judged it (a first frame decides at once).
    await waitFor(
      'the resumed frame and its span',
      () => app.received.includes(2) && spans.getFinishedSpans().length >= 1,
    );
    expect(spans.getFinishedSpans()).toHaveLength(1);
    expect(
      sample(await scrape(), METRICS.clientResumes.prometheusName, {
        transport: 'streamable_http',
        outcome: 'resumed',
      }),
    ).toBe(1);
    second.disable();
    await app.client.close();
  });
});
