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
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { root } from './stack-server';

const req = createRequire(join(root, 'test/sdk-versions/hono-mcp/package.json'));
// biome-ignore lint/suspicious/noExplicitAny: the module's own shape
const hono = req('@hono/mcp') as any;
const Original = hono.StreamableHTTPTransport;

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

  test('options whose getters read #private fields are read on themselves', () => {
    fw = setupForkwatch({}, [hono]);
    class Options {
      #generator = () => 'a';
      readonly eventStore = new hono.MemoryEventStore();
      get sessionIdGenerator() {
        return this.#generator;
      }
    }
    expect(new hono.StreamableHTTPTransport(new Options())).toBeInstanceOf(Original);
  });

  test('disabled: the module exports the class itself again', () => {
    fw = setupForkwatch({}, [hono]);
    expect(hono.StreamableHTTPTransport).not.toBe(Original);
    fw.instrumentation.disable();
    expect(hono.StreamableHTTPTransport).toBe(Original);
  });
});
