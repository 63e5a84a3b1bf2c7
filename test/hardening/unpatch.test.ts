/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Unpatching, proven by behaviour for every patched class: with forkwatch enabled a real resume is recorded (the
 * control); after disable() a real resume records nothing and the SDK works as without forkwatch (its frames, its
 * store, its headers); enabled again, a third resume is recorded, and it is the only other record, so the disabled
 * one had every chance to show and did not.
 */
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { isWrapped } from '@opentelemetry/instrumentation';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { ATTR, SPAN, SPAN_EVENT } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { type ScriptedServer, frame, openSse, startScriptedServer } from '../support/scripted-mcp-server';
// @ts-expect-error: plain ESM module without types
import { startProxy } from '../../lab/proxy.mjs';
import {
  LabEventStore,
  eventAttributes,
  getRequest,
  hydrate,
  notification,
  readFrames,
  requireFrom,
  versionsDir,
} from '../server/support';

const req = requireFrom();
// The client patch puts the resume span's trace context on the resume GET: a header the test can see.
beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  context.disable();
  propagation.disable();
});
const cleanups: (() => unknown)[] = [];
let fw: Forkwatch | undefined;
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await fw?.teardown();
  fw = undefined;
});

const waitFor = async (what: string, probe: () => boolean, ms = 15_000) => {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise(r => setTimeout(r, 10));
  }
};

/** disable(), then enable() with the module instrumented again, as an app toggling forkwatch does. */
function toggle(fw: Forkwatch, module: object, on: boolean) {
  if (!on) return fw.instrumentation.disable();
  fw.instrumentation.enable();
  fw.instrumentation.manuallyInstrument(module);
}

describe.each([
  {
    label: '@modelcontextprotocol/sdk 1.x',
    module: req('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    Client: req('@modelcontextprotocol/sdk/client/index.js').Client,
  },
  {
    label: '@modelcontextprotocol/client 2.x',
    module: req('@modelcontextprotocol/client'),
    Client: req('@modelcontextprotocol/client').Client,
  },
])('$label StreamableHTTPClientTransport', ({ module, Client }) => {
  test('disabled: a resume records nothing, carries no trace context, and the SDK delivers every frame', async () => {
    const server: ScriptedServer = await startScriptedServer();
    cleanups.push(() => server.close());
    fw = setupForkwatch({ verdictTimeoutMs: 5000 }, [module]);
    const proto = module.StreamableHTTPClientTransport.prototype;

    /** One session that loses its stream after `cursor` and resumes onto frame `firstId` (with `n` 3). */
    const session = async (cursor: string, firstId: string) => {
      const received: number[] = [];
      const getsBefore = server.gets.length;
      server.scripts.push(
        res => {
          openSse(res);
          res.write(frame(cursor, 1) + frame(String(Number(cursor) + 1), 2));
          setImmediate(() => res.socket?.destroy());
        },
        res => {
          openSse(res);
          res.write(frame(firstId, 3));
        },
      );
      const transport = new module.StreamableHTTPClientTransport(new URL(server.url), {
        reconnectionOptions: {
          initialReconnectionDelay: 10,
          maxReconnectionDelay: 20,
          reconnectionDelayGrowFactor: 1,
          maxRetries: 1,
        },
      });
      const client = new Client({ name: 'unpatch-test', version: '1.0.0' });
      client.onerror = () => {};
      await client.connect(transport);
      const onmessage = transport.onmessage;
      transport.onmessage = (message: { params?: { data?: { n?: unknown } } }, extra: unknown) => {
        if (typeof message?.params?.data?.n === 'number') received.push(message.params.data.n);
        onmessage?.call(transport, message, extra);
      };
      cleanups.push(() => client.close().catch(() => {}));
      await waitFor('the resumed frame', () => received.includes(3));
      const resumeGet = server.gets[getsBefore + 1]!;
      await client.close();
      return { received, resumeGet };
    };

    const enabled = await session('10', '12'); // control: resumed, recorded
    await fw.waitForSpans(SPAN.clientResume, 1);
    expect(enabled.resumeGet.traceparent).toBeDefined();

    toggle(fw, module, false);
    expect(isWrapped(proto._handleSseStream)).toBe(false);
    const disabled = await session('20', '1'); // a fork: forkwatch would record it if anything were left
    expect(disabled.received).toEqual([1, 2, 3]); // the SDK works
    expect(disabled.resumeGet['last-event-id']).toBe('21');
    expect(disabled.resumeGet.traceparent).toBeUndefined(); // no patched header code ran

    toggle(fw, module, true);
    await session('30', '32');
    const spans = await fw.waitForSpans(SPAN.clientResume, 2);
    expect(spans.map(s => s.attributes[ATTR.outcome])).toEqual(['resumed', 'resumed']);
  });
});

describe.each([
  { label: '@modelcontextprotocol/sdk 1.x', module: req('@modelcontextprotocol/sdk/client/sse.js') },
  { label: '@modelcontextprotocol/client 2.x', module: req('@modelcontextprotocol/client') },
])('$label SSEClientTransport (legacy HTTP+SSE)', ({ module }) => {
  test('disabled: an EventSource reconnect records nothing and the SDK reconnects as usual', async () => {
    const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
    const { McpServer } = req('@modelcontextprotocol/sdk/server/mcp.js');
    const { SSEServerTransport } = req('@modelcontextprotocol/sdk/server/sse.js');
    const transports = new Map<string, SSEServerTransport>();
    const http = createServer(async (request, res) => {
      if (request.method === 'GET') {
        const transport = new SSEServerTransport('/messages', res);
        transports.set(transport.sessionId, transport);
        await new McpServer({ name: 'legacy', version: '1.0.0' }).connect(transport);
        res.write('retry: 50\n\n');
        return;
      }
      const transport = transports.get(new URL(request.url!, 'http://x').searchParams.get('sessionId')!);
      if (!transport) return void res.writeHead(404).end();
      await transport.handlePostMessage(request, res);
    });
    await new Promise<void>(r => http.listen(0, '127.0.0.1', r));
    cleanups.push(() => {
      http.closeAllConnections();
      return new Promise(r => http.close(r));
    });
    const upstream = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    fw = setupForkwatch({ verdictTimeoutMs: 5000 }, [module]);

    /** One session whose GET stream the proxy cuts once; resolves when the EventSource has reconnected. */
    const session = async () => {
      const proxy: { url: string; log: { method: string }[]; close(): Promise<void> } = await startProxy({
        A: upstream,
        B: upstream,
      });
      cleanups.push(() => proxy.close());
      const client = new Client({ name: 'legacy-app', version: '1.0.0' });
      client.onerror = () => {};
      await client.connect(new module.SSEClientTransport(new URL(`${proxy.url}/sse`)));
      cleanups.push(() => client.close().catch(() => {}));
      await client.ping();
      await fetch(`${proxy.url}/__lab/cut`, { method: 'POST', body: JSON.stringify({ midFrame: false }) });
      await waitFor('the reconnect GET', () => proxy.log.filter(e => e.method === 'GET').length >= 2);
      return client;
    };

    await session(); // control: the reconnect lands in a new server session, a fork
    await fw.waitForSpans(SPAN.clientResume, 1);

    toggle(fw, module, false);
    expect(isWrapped(module.SSEClientTransport.prototype._startOrAuth)).toBe(false);
    const client = await session();
    expect(fw.spans(SPAN.clientResume)).toHaveLength(1);
    await client.close();

    toggle(fw, module, true);
    await session();
    await fw.waitForSpans(SPAN.clientResume, 2);
    // Let the disabled session's reconnect be judged, if anything of forkwatch were still on it: it had its chance
    // before the third session's reconnect, which is recorded.
    expect(fw.spans(SPAN.clientResume)).toHaveLength(2);
  });
});

/** The server classes: how to build a hydrated transport, and one resume GET through it. */
const serverLines = [
  {
    label: '@modelcontextprotocol/sdk 1.x WebStandardStreamableHTTPServerTransport',
    module: req('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    className: 'WebStandardStreamableHTTPServerTransport',
    node: false,
  },
  {
    label: '@modelcontextprotocol/server 2.x WebStandardStreamableHTTPServerTransport',
    module: req('@modelcontextprotocol/server'),
    className: 'WebStandardStreamableHTTPServerTransport',
    node: false,
  },
  {
    label: '@modelcontextprotocol/sdk 1.24 StreamableHTTPServerTransport (Node)',
    module: requireFrom(join(versionsDir, 'v1.24'))('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    className: 'StreamableHTTPServerTransport',
    node: true,
  },
];

describe.each(serverLines)('$label', ({ module, className, node }) => {
  test("disabled: a resume records nothing, the store is the app's own again, and the SDK replays exactly", async () => {
    fw = setupForkwatch({}, [module]);
    const Transport = module[className];
    const store = new LabEventStore({ idFormat: 'integer', unknownCursor: 'validate' });
    const transport = hydrate(new Transport({ sessionIdGenerator: () => 'session-1', eventStore: store }));
    let server: Server | undefined;
    if (node) {
      server = createServer((request, response) => void transport.handleRequest(request, response));
      await new Promise<void>(r => server!.listen(0, '127.0.0.1', r));
      cleanups.push(() => {
        server!.closeAllConnections();
        return new Promise(r => server!.close(r));
      });
    }
    /** A resume from `cursor`, read until `count` frames arrived. */
    const resume = async (cursor: string, count: number) => {
      if (!node) {
        const res = await transport.handleRequest(getRequest({ 'last-event-id': cursor }));
        return (await readFrames(res.body, { count })).map(f => f.id);
      }
      const abort = new AbortController();
      const res = await fetch(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/mcp`, {
        headers: {
          accept: 'text/event-stream',
          'mcp-session-id': 'session-1',
          'mcp-protocol-version': '2025-11-25',
          'last-event-id': cursor,
        },
        signal: abort.signal,
      });
      const ids = (await readFrames(res.body, { count })).map(f => f.id);
      abort.abort();
      // The transport lets go of the stream when it sees the connection close; only then can the next resume take it.
      await waitFor('the stream released', () => transport._streamMapping.size === 0);
      return ids;
    };

    for (let n = 1; n <= 3; n++) await transport.send(notification(n));
    expect(await resume('1', 2)).toEqual(['2', '3']); // control
    await fw.waitForSpans(SPAN.serverResume, 1);

    toggle(fw, module, false);
    expect(isWrapped(Transport.prototype.handleGetRequest)).toBe(false);
    await transport.send(notification(4));
    expect(transport._eventStore ?? transport._webStandardTransport?._eventStore).toBe(store);
    expect(await resume('2', 2)).toEqual(['3', '4']); // the SDK works

    toggle(fw, module, true);
    expect(await resume('3', 1)).toEqual(['4']);
    const spans = await fw.waitForSpans(SPAN.serverResume, 2);
    expect(spans.map(s => eventAttributes(s, SPAN_EVENT.resumeCursor)[ATTR.cursor])).toEqual(['1', '3']);
  });
});
