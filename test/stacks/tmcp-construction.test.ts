/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * tmcp's HttpTransport keeps its McpServer in a #private field, so forkwatch replaces the class in the module's
 * exports by a stand-in that watches its construction and listens to the server's broadcasts
 * (src/server/stacks/tmcp/construction.ts). What the host sees must not change: the real tmcp 1.20 and
 * @tmcp/transport-http 0.9 (pinned in test/sdk-versions/tmcp, ESM only), instrumented in process through the manual
 * API on a copy of the module's exports (an ESM namespace cannot take the stand-in; the register preload's hooks
 * can), each GET answered by `respond` and its stream read as @hono/node-server would.
 */
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { probeServerDelivery } from '../../src/server/server-delivery';
import { StandaloneStreams } from '../../src/server/stacks/tmcp/standalone-streams';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sample } from '../support/scrape';
import { root } from './stack-server';

const modules = join(root, 'test/sdk-versions/tmcp/node_modules');
const events = METRICS.serverEvents.prometheusName;

// biome-ignore lint/suspicious/noExplicitAny: the packages' own shapes
let tmcp: any;
// biome-ignore lint/suspicious/noExplicitAny: the packages' own shapes
let http: any;
// biome-ignore lint/suspicious/noExplicitAny: the packages' own shapes
let sessions: any;
beforeAll(async () => {
  // ESM packages whose exports name no package.json: imported by the path of their main module.
  tmcp = await import(join(modules, 'tmcp/src/index.js'));
  http = await import(join(modules, '@tmcp/transport-http/src/index.js'));
  sessions = await import(join(modules, '@tmcp/session-manager/src/index.js'));
});

let fw: Forkwatch | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await fw?.teardown();
  fw = undefined;
});

/** A tmcp server whose broadcasts reach its GET streams (tools/list_changed). */
function newServer() {
  return new tmcp.McpServer(
    { name: 'construction', version: '1.0.0', description: 'forkwatch construction test' },
    { adapter: undefined, capabilities: { tools: { listChanged: true } } },
  );
}

/** The module's exports as the manual API gets them: a plain object the stand-in can be put in. */
function instrumented(): { module: { HttpTransport: new (...args: unknown[]) => object } } {
  const module = { HttpTransport: http.HttpTransport };
  fw = setupForkwatch({}, [module]);
  return { module };
}

type Transport = { respond(request: Request): Promise<Response | null> };

/** Opens session `id`'s GET stream on `transport`; `drop` aborts the request as a client that went away does. */
async function openStream(transport: Transport, id: string) {
  const abort = new AbortController();
  const request = new Request('http://127.0.0.1/mcp', {
    headers: { accept: 'text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    signal: abort.signal,
  });
  const response = (await transport.respond(request))!;
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  return {
    status: response.status,
    /** What the stream carried so far (it never ends by itself). */
    async read(): Promise<string> {
      for (;;) {
        const chunk = await Promise.race([reader.read(), new Promise(r => setTimeout(r, 20, undefined))]);
        if (chunk === undefined || (chunk as ReadableStreamReadResult<Uint8Array>).done) return text;
        text += decoder.decode((chunk as ReadableStreamReadResult<Uint8Array>).value, { stream: true });
      }
    },
    /** The client's connection drops: the request's signal aborts and the adapter cancels the body. */
    async drop(): Promise<void> {
      abort.abort();
      await reader.cancel();
    },
  };
}

describe("tmcp HttpTransport's construction", () => {
  test('the stand-in keeps the class: name, prototype, statics, instanceof, subclasses', () => {
    const { module } = instrumented();
    const Stand = module.HttpTransport;
    const Original = http.HttpTransport;
    expect(Stand).not.toBe(Original); // the export is the stand-in
    expect(Stand.name).toBe(Original.name);
    expect(Stand.prototype).toBe(Original.prototype);
    expect(Object.getOwnPropertyNames(Stand)).toEqual(Object.getOwnPropertyNames(Original));
    const transport = new Stand(newServer(), { path: '/mcp' });
    expect(transport).toBeInstanceOf(Original);
    expect(transport).toBeInstanceOf(Stand);
    expect(Object.getPrototypeOf(transport)).toBe(Original.prototype);
    class Sub extends Stand {}
    const sub = new Sub(newServer(), { path: '/mcp' });
    expect(sub).toBeInstanceOf(Sub);
    expect(Object.getPrototypeOf(sub)).toBe(Sub.prototype);
    // As the host sees the class without forkwatch (issue 46): its constructor and its source text.
    expect(transport.constructor).toBe(Stand);
    expect(Stand.toString()).toBe(Function.prototype.toString.call(Original));
    expect(String(Stand)).toBe(Function.prototype.toString.call(Original));
  });

  test("the constructor gets the caller's own arguments, untouched", () => {
    const seen: unknown[][] = [];
    class Recording extends http.HttpTransport {
      constructor(...args: unknown[]) {
        super(...args);
        seen.push(args);
      }
    }
    const module = { HttpTransport: Recording };
    fw = setupForkwatch({}, [module]);
    expect(module.HttpTransport).not.toBe(Recording);
    const server = newServer();
    const options = Object.freeze({ path: '/mcp' });
    new module.HttpTransport(server, options);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toHaveLength(2);
    expect(seen[0]![0]).toBe(server);
    expect(seen[0]![1]).toBe(options);
  });

  test('a GET stream carries the very bytes, in order, with forkwatch and without', async () => {
    const run = async (Transport: new (...args: unknown[]) => object) => {
      const server = newServer();
      const transport = new Transport(server, { path: '/mcp' }) as Transport;
      const stream = await openStream(transport, 'session-a');
      for (let i = 0; i < 3; i++) server.changed('tools');
      const text = await stream.read();
      await stream.drop();
      return { status: stream.status, text };
    };
    const without = await run(http.HttpTransport);
    const { module } = instrumented();
    const withForkwatch = await run(module.HttpTransport);
    expect(withForkwatch).toEqual(without);
    expect(without.text.match(/notifications\/tools\/list_changed/g)).toHaveLength(3);
    expect(sample(await fw!.metrics(), events, { transport: 'streamable_http' })).toBe(3);
  });

  test("a broadcast while the session's stream is down is pending in the ledger; one on an open stream is not", async () => {
    const { module } = instrumented();
    const server = newServer();
    const transport = new module.HttpTransport(server, { path: '/mcp' }) as Transport;
    const stream = await openStream(transport, 'session-b');
    server.changed('tools');
    await stream.read();
    const ledger = probeServerDelivery(fw!.instrumentation.serverDelivery);
    expect(ledger.sessionsWithPending).toBe(0);
    await stream.drop();
    server.changed('tools');
    server.changed('tools');
    expect(ledger.sessionsWithPending).toBe(1);
    expect(sample(await fw!.metrics(), events, { transport: 'streamable_http' })).toBe(3);
  });

  test('a failure while recording a broadcast never reaches the host, and the stream still gets it', async () => {
    const { module } = instrumented();
    const broadcast = vi.spyOn(StandaloneStreams.prototype, 'broadcast').mockImplementation(() => {
      throw new Error('recording failed');
    });
    const server = newServer();
    const transport = new module.HttpTransport(server, { path: '/mcp' }) as Transport;
    const stream = await openStream(transport, 'session-c');
    // A listener's throw would not reach the caller of changed() but the process, as an uncaught exception.
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      server.changed('tools');
      await new Promise(r => setTimeout(r, 20));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
    expect(broadcast).toHaveBeenCalledTimes(1);
    expect(await stream.read()).toMatch(/notifications\/tools\/list_changed/);
    await stream.drop();
  });

  test('a transport with a stream session manager of its own records no delivery', async () => {
    const { module } = instrumented();
    const ledger = () => probeServerDelivery(fw!.instrumentation.serverDelivery).sessionsWithPending;
    // The control: the same steps on a transport with tmcp's own manager leave one event pending.
    const control = newServer();
    const watched = await openStream(new module.HttpTransport(control, { path: '/mcp' }) as Transport, 'session-d');
    await watched.drop();
    control.changed('tools');
    expect(ledger()).toBe(1);
    const own = newServer();
    const streams = new sessions.InMemoryStreamSessionManager();
    const transport = new module.HttpTransport(own, { path: '/mcp', sessionManager: { streams } }) as Transport;
    const stream = await openStream(transport, 'session-e');
    await stream.drop();
    own.changed('tools');
    expect(ledger()).toBe(1);
    expect(sample(await fw!.metrics(), events, { transport: 'streamable_http' })).toBe(1);
  });
});
