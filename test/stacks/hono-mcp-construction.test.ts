/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @hono/mcp's StreamableHTTPTransport keeps its event store in a #private field, so forkwatch replaces the class in
 * the module's exports by a stand-in that watches its construction (src/server/stacks/hono/event-store.ts). What the host
 * sees must not change: the real CommonJS build (0.3, pinned in test/sdk-versions/hono-mcp), instrumented in process.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { watchHonoConstruction } from '../../src/server/stacks/hono/event-store';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sampleOne } from '../support/scrape';
import { root } from './stack-server';

const req = createRequire(join(root, 'test/sdk-versions/hono-mcp/package.json'));
// biome-ignore lint/suspicious/noExplicitAny: the module's own shape
const hono = req('@hono/mcp') as any;
const Original = hono.StreamableHTTPTransport;
const { Hono } = req('hono');
const { McpServer } = req('@modelcontextprotocol/sdk/server/mcp.js');
const RESUMES = METRICS.serverResumes.prometheusName;
const PROTOCOL = '2025-06-18';
/** @hono/mcp's standalone stream id (`#standaloneSseStreamId`). */
const STANDALONE = '_GET_stream';

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

describe('@hono/mcp StreamableHTTPTransport construction', () => {
  test('the stand-in keeps the class: name, prototype, statics, instanceof, subclasses', () => {
    fw = setupForkwatch({}, [hono]);
    const Stand = hono.StreamableHTTPTransport;
    expect(Stand).not.toBe(Original); // the export is the stand-in
    expect(Stand.name).toBe(Original.name);
    expect(Stand.prototype).toBe(Original.prototype);
    expect(Object.getOwnPropertyNames(Stand)).toEqual(Object.getOwnPropertyNames(Original));
    const transport = new Stand({ sessionIdGenerator: () => 'a' });
    expect(transport).toBeInstanceOf(Original);
    expect(transport).toBeInstanceOf(Stand);
    expect(Object.getPrototypeOf(transport)).toBe(Original.prototype);
    class Sub extends Stand {}
    const sub = new Sub();
    expect(sub).toBeInstanceOf(Sub);
    expect(Object.getPrototypeOf(sub)).toBe(Sub.prototype);
    expect(new Stand()).toBeInstanceOf(Original); // no options at all
    expect(new Stand(null)).toBeInstanceOf(Original);
  });

  test("the caller's options and store are left untouched", () => {
    fw = setupForkwatch({}, [hono]);
    const store = new hono.MemoryEventStore();
    const ownKeys = Reflect.ownKeys(store);
    const options = Object.freeze({ sessionIdGenerator: () => 'a', eventStore: store });
    const transport = new hono.StreamableHTTPTransport(options);
    expect(transport).toBeInstanceOf(Original);
    expect(options.eventStore).toBe(store);
    expect(Reflect.ownKeys(store)).toEqual(ownKeys);
    expect(store.storeEvent).toBe(hono.MemoryEventStore.prototype.storeEvent);
  });

  test('options whose getters read #private fields are read on themselves, and their store is watched', async () => {
    fw = setupForkwatch({}, [hono]);
    // A construction that failed with forkwatch's view of the options is retried with the caller's own: the host
    // still gets its transport, so only what forkwatch says of the store can tell the two apart (issue 47).
    const errors: unknown[] = [];
    (fw.instrumentation as unknown as { _diag: object })._diag = {
      error: (...args: unknown[]) => errors.push(args),
      warn() {},
      info() {},
      debug() {},
      verbose() {},
    };
    class Options {
      #generator = () => 'private-getter-session';
      readonly eventStore = new hono.MemoryEventStore();
      get sessionIdGenerator() {
        return this.#generator;
      }
    }
    const options = new Options();
    const transport = new hono.StreamableHTTPTransport(options);
    expect(transport).toBeInstanceOf(Original);

    // A real resume through a Hono app in process: the store replays the event after the cursor, and forkwatch
    // counts the replay only if the transport holds its recording wrapper of the store.
    const mcp = new McpServer({ name: 'construction', version: '1.0.0' });
    await mcp.connect(transport);
    const app = new Hono();
    app.all('/mcp', (c: unknown) => transport.handleRequest(c));
    const initialized = await app.request('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(initialized.status).toBe(200);
    await initialized.text();
    expect(initialized.headers.get('mcp-session-id')).toBe('private-getter-session');
    const note = (n: number) => ({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', data: n },
    });
    const cursor = await options.eventStore.storeEvent(STANDALONE, note(1));
    await options.eventStore.storeEvent(STANDALONE, note(2));
    const resumed = await app.request('/mcp', {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': 'private-getter-session',
        'mcp-protocol-version': PROTOCOL,
        'last-event-id': cursor,
      },
    });
    expect(resumed.status).toBe(200);
    const reader = resumed.body!.getReader();
    let body = '';
    while (!body.includes('"data":2')) body += new TextDecoder().decode((await reader.read()).value);
    expect(body).not.toContain('"data":1');
    const deadline = Date.now() + 5000;
    let replayed = sampleOne(await fw.metrics(), RESUMES, { outcome: 'replayed' });
    while (replayed !== 1 && Date.now() < deadline) {
      await fw.settle();
      replayed = sampleOne(await fw.metrics(), RESUMES, { outcome: 'replayed' });
    }
    await reader.cancel();
    await mcp.close();
    expect(replayed).toBe(1);
    // And nothing failed on the way (the retry reports its first failure through diag).
    expect(errors).toEqual([]);
  });

  test('disabled: the module exports the class itself again', () => {
    fw = setupForkwatch({}, [hono]);
    expect(hono.StreamableHTTPTransport).not.toBe(Original);
    fw.instrumentation.disable();
    expect(hono.StreamableHTTPTransport).toBe(Original);
    expect(Original.prototype.constructor).toBe(Original);
    expect(new Original().constructor).toBe(Original);
  });

  // Before the patcher pointed the prototype's constructor at the stand-in, both were the hidden class.
  test("an instance's constructor is the class the host imported", () => {
    fw = setupForkwatch({}, [hono]);
    const Stand = hono.StreamableHTTPTransport;
    expect(new Stand().constructor).toBe(Stand);
    expect(Stand.prototype.constructor).toBe(Stand);
    expect(Object.getOwnPropertyDescriptor(Stand.prototype, 'constructor')).toMatchObject({
      writable: true,
      enumerable: false,
      configurable: true,
    });
  });

  // Before the stand-in answered `toString`, a Proxy's source text came back: `function () { [native code] }`.
  test("its toString() is the class's source text", () => {
    fw = setupForkwatch({}, [hono]);
    const Stand = hono.StreamableHTTPTransport;
    const source = Function.prototype.toString.call(Original);
    expect(source).toMatch(/^class /);
    expect(Stand.toString()).toBe(source);
    expect(String(Stand)).toBe(source);
    class Sub extends Stand {}
    expect(Sub.toString()).toBe(Function.prototype.toString.call(Sub));
  });

  // Before, a constructor that threw was run a second time with the caller's own arguments (and a diagnostic said so).
  test.each([
    { store: false, what: 'without a store' },
    { store: true, what: 'with a store' },
  ])('a throwing constructor runs once and its own error reaches the caller, $what', ({ store }) => {
    fw = setupForkwatch({}, [hono]);
    const boom = new Error('boom');
    let reads = 0;
    const options = {
      ...(store ? { eventStore: new hono.MemoryEventStore() } : {}),
      get sessionIdGenerator() {
        reads++;
        throw boom;
      },
    };
    let caught: unknown;
    try {
      new hono.StreamableHTTPTransport(options);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBe(boom);
    expect(reads).toBe(1);
  });

  test('a constructor that spreads or inspects its options sees their keys, values and prototype', () => {
    fw = setupForkwatch({}, []);
    const store = new hono.MemoryEventStore();
    class Options {
      readonly eventStore = store;
      readonly answer = 42;
    }
    class Probe {
      readonly seen: Record<string, unknown>;
      constructor(options: object) {
        this.seen = {
          keys: Object.keys(options),
          spread: { ...options },
          isOptions: options instanceof Options,
          has: 'answer' in options,
        };
      }
    }
    const Stand = watchHonoConstruction(Probe, fw.instrumentation);
    const { seen } = new Stand(new Options());
    expect(seen.keys).toEqual(['eventStore', 'answer']);
    expect(seen.isOptions).toBe(true);
    expect(seen.has).toBe(true);
    const spread = seen.spread as { answer: number; eventStore: { storeEvent: unknown } };
    expect(spread.answer).toBe(42);
    // The store the class keeps is forkwatch's recording view of the caller's.
    expect(typeof spread.eventStore.storeEvent).toBe('function');
    expect(spread.eventStore).not.toBe(store);
  });
});
