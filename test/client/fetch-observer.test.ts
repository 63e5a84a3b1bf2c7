/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire-level observer (client/fetch-observer.ts), in process against a scripted SSE server on 127.0.0.1: it
 * judges session GETs that carry Last-Event-ID, hands the caller the same bytes, leaves everything else alone and
 * takes itself off `globalThis.fetch` (or, on Node 24+, undici's channels) on disable().
 */
import * as diagnosticsChannel from 'node:diagnostics_channel';
import { afterEach, expect, test } from 'vitest';
import { ForkwatchInstrumentation } from '../../src';
import { undiciPublishesBodyChunks } from '../../src/client/undici-version';
import { METRICS, SPAN, SPAN_EVENT } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sample } from '../support/scrape';
import { type ScriptedServer, frame, openSse, startScriptedServer } from '../support/scripted-mcp-server';

let fw: Forkwatch | undefined;
let server: ScriptedServer | undefined;
afterEach(async () => {
  await fw?.teardown();
  await server?.close();
  fw = undefined;
  server = undefined;
});

const sessionGet = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': 's-1', 'mcp-protocol-version': '2025-11-25', ...headers },
  });

async function readAll(res: Response): Promise<string> {
  return new TextDecoder().decode(await new Response(res.body).arrayBuffer());
}

/** Where undici publishes body chunks (Node 24+), the observer subscribes to its channels and leaves fetch alone. */
const onChannels = undiciPublishesBodyChunks(process.versions.undici);
const undiciCreate = diagnosticsChannel.channel('undici:request:create');

test('enable() installs the observer, disable() takes it off; observeFetch: false leaves fetch alone', async () => {
  const original = globalThis.fetch;
  fw = setupForkwatch({}, []);
  if (onChannels) {
    expect(globalThis.fetch).toBe(original);
    expect(undiciCreate.hasSubscribers).toBe(true);
  } else {
    expect(globalThis.fetch).not.toBe(original);
  }
  fw.instrumentation.disable();
  expect(globalThis.fetch).toBe(original);
  expect(undiciCreate.hasSubscribers).toBe(false);
  await fw.teardown();
  fw = setupForkwatch({ observeFetch: false }, []);
  expect(globalThis.fetch).toBe(original);
  expect(undiciCreate.hasSubscribers).toBe(false);
});

test('a resume whose first id restarts the sequence is forked; the caller reads exactly the bytes the server sent', async () => {
  server = await startScriptedServer();
  const sent = `: keep-alive\n\n${frame('1', 1)}${frame('2', 2)}`;
  server.scripts.push(res => {
    openSse(res);
    res.end(sent);
  });
  const forks: unknown[] = [];
  fw = setupForkwatch({ onForkDetected: info => forks.push(info) }, []);
  const res = await sessionGet(server.url, { 'last-event-id': '41' });
  expect(await readAll(res)).toBe(sent);
  await fw.settle();
  const metrics = await fw.metrics();
  expect(
    sample(metrics, METRICS.clientForks.prometheusName, { transport: 'streamable_http', reason: 'id_regressed' }),
  ).toBe(1);
  expect(forks).toMatchObject([{ outcome: 'forked', reason: 'id_regressed', cursor: '41', firstEventId: '1' }]);
  const [span] = fw.spans(SPAN.clientResume);
  expect(span!.events.map(e => e.name)).toEqual([SPAN_EVENT.resumeCursor, SPAN_EVENT.resumeFirstFrame]);
});

test('a contiguous resume is resumed; a later resume that replays a consumed id is forked (id_reused)', async () => {
  server = await startScriptedServer();
  server.scripts.push(res => {
    openSse(res);
    res.end(frame('42', 1) + frame('43', 2));
  });
  server.scripts.push(res => {
    openSse(res);
    res.end(frame('43', 2));
  });
  fw = setupForkwatch({}, []);
  await readAll(await sessionGet(server.url, { 'last-event-id': '41' }));
  await readAll(await sessionGet(server.url, { 'last-event-id': 'opaque-cursor' }));
  await fw.settle();
  const metrics = await fw.metrics();
  expect(sample(metrics, METRICS.clientResumes.prometheusName, { outcome: 'resumed' })).toBe(1);
  expect(sample(metrics, METRICS.clientForks.prometheusName, { reason: 'id_reused' })).toBe(1);
});

test('fail-loud: the forked frame never reaches the caller, whose read fails with StreamForkDetected', async () => {
  server = await startScriptedServer();
  server.scripts.push(res => {
    openSse(res);
    res.write(frame('1', 1));
  });
  fw = setupForkwatch({ onFork: 'abort' }, []);
  const res = await sessionGet(server.url, { 'last-event-id': '41' });
  const reader = res.body!.getReader();
  // On undici's channels the cut is undici's own abort: its `terminated` error carries forkwatch's as its cause.
  const expected = { name: 'StreamForkDetected' };
  await expect(reader.read()).rejects.toMatchObject(onChannels ? { message: 'terminated', cause: expected } : expected);
});

test('GETs without a session id, POSTs and rejected resumes keep their own Response body', async () => {
  server = await startScriptedServer();
  server.scripts.push(res => {
    openSse(res);
    res.end(frame('1', 1));
  });
  server.scripts.push(res => {
    res.writeHead(404).end();
  });
  fw = setupForkwatch({}, []);
  const plain = await fetch(server.url, { headers: { accept: 'text/event-stream' } });
  expect(Object.getOwnPropertyDescriptor(plain, 'body')).toBeUndefined();
  await readAll(plain);
  const rejected = await sessionGet(server.url, { 'last-event-id': '41' });
  expect(rejected.status).toBe(404);
  expect(Object.getOwnPropertyDescriptor(rejected, 'body')).toBeUndefined();
  await fw.settle();
  const metrics = await fw.metrics();
  expect(sample(metrics, METRICS.clientResumes.prometheusName, { outcome: 'rejected' })).toBe(1);
  expect(fw.spans(SPAN.clientResume)).toHaveLength(1);
});

test('a caller that looks at body and then reads text() gets the text: the source is locked only when read', async () => {
  server = await startScriptedServer();
  const sent = frame('42', 1);
  server.scripts.push(res => {
    openSse(res);
    res.end(sent);
  });
  fw = setupForkwatch({}, []);
  const res = await sessionGet(server.url, { 'last-event-id': '41' });
  expect(res.body).not.toBeNull();
  expect(await res.text()).toBe(sent);
});

test("a fork through the undici package's own fetch (mcp-remote's) is counted on undici's channels, not by the wrapper", async () => {
  server = await startScriptedServer();
  server.scripts.push(res => {
    openSse(res);
    res.end(frame('1', 1));
  });
  fw = setupForkwatch({}, []);
  const undici = require('undici') as { fetch: typeof globalThis.fetch };
  const res = await undici.fetch(server.url, {
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': 's-undici',
      'mcp-protocol-version': '2025-11-25',
      'last-event-id': '41',
    },
  });
  expect(await res.text()).toBe(frame('1', 1));
  await fw.settle();
  const forks = sample(await fw.metrics(), METRICS.clientForks.prometheusName, { reason: 'id_regressed' });
  expect(forks).toBe(onChannels ? 1 : 0);
});

test('a second ForkwatchInstrumentation in the process leaves the wire to the first: a fork is reported once', async () => {
  server = await startScriptedServer();
  server.scripts.push(res => {
    openSse(res);
    res.end(frame('1', 1));
  });
  const first: unknown[] = [];
  const second: unknown[] = [];
  fw = setupForkwatch({ onForkDetected: info => first.push(info) }, []);
  const other = new ForkwatchInstrumentation({ onForkDetected: info => second.push(info) });
  try {
    await readAll(await sessionGet(server.url, { 'last-event-id': '41' }));
    await fw.settle();
    expect(first).toHaveLength(1);
    expect(second).toEqual([]);
  } finally {
    other.disable();
  }
  // The second's disable() took nothing of the first's away.
  expect(undiciCreate.hasSubscribers).toBe(onChannels);
});
