/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire-level observer (client/wire/), in process against a scripted SSE server on 127.0.0.1: it
 * judges session GETs that carry Last-Event-ID, hands the caller the same bytes, leaves everything else alone and
 * takes itself off `globalThis.fetch` (Node 22) and undici's channels (every line) on disable(). The `undici` npm
 * package's own fetch (mcp-remote's) is observed once on every line, whichever undici its dispatcher is.
 */
import * as diagnosticsChannel from 'node:diagnostics_channel';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { ForkwatchInstrumentation } from '../../src';
import { undiciPublishesBodyChunks } from '../../src/client/wire/undici-version';
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

/** Where the runtime's undici publishes body chunks (Node 24+), the observer leaves fetch alone (channels only). */
const onChannels = undiciPublishesBodyChunks(process.versions.undici);
const undiciCreate = diagnosticsChannel.channel('undici:request:create');

test('enable() installs the observer, disable() takes it off; observeFetch: false leaves fetch alone', async () => {
  const original = globalThis.fetch;
  fw = setupForkwatch({}, []);
  expect(undiciCreate.hasSubscribers).toBe(true);
  if (onChannels) expect(globalThis.fetch).toBe(original);
  else expect(globalThis.fetch).not.toBe(original);
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

interface UndiciPackage {
  fetch: (url: string, init: Record<string, unknown>) => Promise<Response>;
  Agent: new () => { close(): Promise<void> };
}
const undici7 = require('undici') as UndiciPackage;
const undici6 = require(join(__dirname, '../sdk-versions/undici6/node_modules/undici')) as UndiciPackage;
const agents: { close(): Promise<void> }[] = [];
const agentOf = (undici: UndiciPackage) => () => {
  const agent = new undici.Agent();
  agents.push(agent);
  return agent;
};
afterEach(async () => {
  await Promise.all(agents.splice(0).map(agent => agent.close()));
});

/**
 * The package's fetch runs on its dispatcher's undici, which every copy shares as the global one (whichever loaded
 * first): undici 7.11+ publishes the body chunks, undici 6 (Node 22's own, or an app's) does not and its requests'
 * chunks are tapped.
 */
const packageFetches = [
  ['undici 7 fetch on its own Agent', undici7, agentOf(undici7)],
  [
    "undici 7 fetch on an undici 6 Agent (Node 22's global one when the global fetch ran first)",
    undici7,
    agentOf(undici6),
  ],
  ["an app's undici 6 package, fetch and Agent", undici6, agentOf(undici6)],
] as const;

describe.each(packageFetches)("the undici package's own fetch (mcp-remote's): %s", (_, undici, dispatcherOf) => {
  const resumeThroughUndici = (url: string, cursor: string) =>
    undici.fetch(url, {
      dispatcher: dispatcherOf(),
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': 's-undici',
        'mcp-protocol-version': '2025-11-25',
        'last-event-id': cursor,
      },
    });

  test('a fork is counted once, on every line, and the caller reads the bytes the server sent', async () => {
    server = await startScriptedServer();
    server.scripts.push(res => {
      openSse(res);
      res.end(frame('1', 1) + frame('2', 2));
    });
    const forks: unknown[] = [];
    fw = setupForkwatch({ onForkDetected: info => forks.push(info) }, []);
    const res = await resumeThroughUndici(server.url, '41');
    expect(await res.text()).toBe(frame('1', 1) + frame('2', 2));
    await fw.settle();
    const metrics = await fw.metrics();
    expect(sample(metrics, METRICS.clientForks.prometheusName, { reason: 'id_regressed' })).toBe(1);
    expect(sample(metrics, METRICS.clientResumes.prometheusName, { outcome: 'forked' })).toBe(1);
    expect(forks).toMatchObject([{ outcome: 'forked', reason: 'id_regressed', cursor: '41', firstEventId: '1' }]);
  });

  test('a healthy resume is resumed, each frame consumed once (a chunk both tapped and published counts once)', async () => {
    server = await startScriptedServer();
    server.scripts.push(res => {
      openSse(res);
      res.write(frame('42', 1));
      setTimeout(() => res.end(frame('43', 2) + frame('44', 3)), 20);
    });
    fw = setupForkwatch({}, []);
    const res = await resumeThroughUndici(server.url, '41');
    expect(await res.text()).toBe(frame('42', 1) + frame('43', 2) + frame('44', 3));
    await fw.settle();
    const metrics = await fw.metrics();
    expect(sample(metrics, METRICS.clientResumes.prometheusName, { outcome: 'resumed' })).toBe(1);
    expect(sample(metrics, METRICS.clientDuplicateEvents.prometheusName, {})).toBe(0);
    expect(sample(metrics, METRICS.clientForks.prometheusName, {})).toBe(0);
  });

  test("fail-loud: the forked frame never reaches the caller, whose read fails with undici's abort", async () => {
    server = await startScriptedServer();
    server.scripts.push(res => {
      openSse(res);
      res.write(frame('1', 1));
    });
    fw = setupForkwatch({ onFork: 'abort' }, []);
    const res = await resumeThroughUndici(server.url, '41');
    const reader = res.body!.getReader();
    // undici's own abort of the request: its `terminated` error carries forkwatch's as its cause.
    await expect(reader.read()).rejects.toMatchObject({ message: 'terminated', cause: { name: 'StreamForkDetected' } });
  });

  test('disable() takes the tap off with the channels: a resume sent after it is not judged', async () => {
    server = await startScriptedServer();
    server.scripts.push(res => {
      openSse(res);
      res.end(frame('1', 1));
    });
    fw = setupForkwatch({}, []);
    fw.instrumentation.disable();
    expect(await (await resumeThroughUndici(server.url, '41')).text()).toBe(frame('1', 1));
    expect(sample(await fw.metrics(), METRICS.clientForks.prometheusName, {})).toBe(0);
  });
});

test("the global fetch on the undici package's Agent is judged once (Node 22: by the wrapper, not the channels too)", async () => {
  server = await startScriptedServer();
  server.scripts.push(res => {
    openSse(res);
    res.end(frame('1', 1));
  });
  const forks: unknown[] = [];
  fw = setupForkwatch({ onForkDetected: info => forks.push(info) }, []);
  // Node's fetch takes undici's `dispatcher` option: undici 7.30's requests publish their body chunks on every line.
  const res = await fetch(server.url, {
    dispatcher: agentOf(undici7)(),
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': 's-agent',
      'mcp-protocol-version': '2025-11-25',
      'last-event-id': '41',
    },
  } as RequestInit);
  expect(await readAll(res)).toBe(frame('1', 1));
  await fw.settle();
  expect(sample(await fw.metrics(), METRICS.clientForks.prometheusName, { reason: 'id_regressed' })).toBe(1);
  expect(forks).toHaveLength(1);
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
  expect(undiciCreate.hasSubscribers).toBe(true);
});
