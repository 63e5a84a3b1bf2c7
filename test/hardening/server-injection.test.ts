/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Attempts to inject through Last-Event-ID, sent as raw bytes over TCP to a real @modelcontextprotocol/sdk server
 * (Node StreamableHTTPServerTransport over node:http, with the SDK's own InMemoryEventStore or a validating store)
 * with forkwatch's server patch. Each request is sent once with forkwatch and once without: the server must answer
 * byte for byte the same (once the session id, event ids and the date are normalised), forkwatch must log nothing, and
 * what it records must stay bounded and printable.
 */
import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import { connect } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as webStandard from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
// @ts-expect-error: plain ESM module without types
import { LabEventStore } from '../../lab/event-store.mjs';
import { ATTR } from '../../src/shared/names';
import { type Forkwatch, diagnostics, expectPrintableSpans, setupForkwatch, sleep } from './support';

type StoreKind = 'sdk-in-memory' | 'validating';

interface Session {
  id: string;
  transport: StreamableHTTPServerTransport;
  mcp: McpServer;
  store: { events?: Map<string, unknown> } & Record<string, unknown>;
}

/**
 * A real SDK server on 127.0.0.1: a new session (transport, McpServer, store) per initialize. `maxHeaderSize`: what
 * node:http accepts (16 KiB by default), raised by hosts whose clients send large headers.
 */
async function startSdkServer(kind: StoreKind, maxHeaderSize?: number) {
  const sessions = new Map<string, Session>();
  const firstStored = new Map<string, string>();
  const http: Server = createServer({ maxHeaderSize }, async (req, res) => {
    try {
      let body: unknown;
      if (req.method === 'POST') {
        let text = '';
        for await (const chunk of req) text += chunk;
        body = text ? JSON.parse(text) : undefined;
      }
      const sid = req.headers['mcp-session-id'];
      let session = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!session && !sid && req.method === 'POST') {
        const store =
          kind === 'sdk-in-memory'
            ? new InMemoryEventStore()
            : new LabEventStore({ idFormat: 'sdk', unknownCursor: 'validate' });
        const original = store.storeEvent.bind(store);
        // Remember the first id stored on the standalone stream: a real cursor, with an event after it to replay.
        store.storeEvent = async (streamId: string, message: unknown) => {
          const id = await original(streamId, message);
          const sid = transport.sessionId;
          if (sid && streamId === '_GET_stream' && !firstStored.has(sid)) firstStored.set(sid, id);
          return id;
        };
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore: store,
          onsessioninitialized: id => {
            sessions.set(id, created);
          },
        });
        const mcp = new McpServer({ name: 'injection-target', version: '1.0.0' }, { capabilities: { logging: {} } });
        const created: Session = { id: '', transport, mcp, store };
        await mcp.connect(transport);
        session = created;
      }
      if (!session) {
        res.writeHead(404).end();
        return;
      }
      await session.transport.handleRequest(req, res, body);
      if (session.transport.sessionId) session.id = session.transport.sessionId;
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}/mcp`;
  return {
    port,
    /** A new initialized session with two stored notifications; returns its id and the first event's id. */
    async newSession(): Promise<{ id: string; cursor: string }> {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const init = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'injector', version: '1' } },
        }),
      });
      const id = init.headers.get('mcp-session-id')!;
      await init.text();
      const more = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
      await (
        await fetch(url, {
          method: 'POST',
          headers: more,
          body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
        })
      ).text();
      const session = sessions.get(id)!;
      for (let n = 1; n <= 2; n++) {
        await session.mcp.server.notification({
          method: 'notifications/message',
          params: { level: 'info', data: { n } },
        });
      }
      return { id, cursor: firstStored.get(id)! };
    },
    async close() {
      for (const s of sessions.values()) await s.transport.close().catch(() => {});
      http.closeAllConnections();
      await new Promise(resolve => http.close(resolve));
    },
  };
}

/**
 * Sends raw bytes and returns everything the server wrote until it closed, or `quietMs` after its last byte (an SSE
 * answer stays open; the SDK writes its head and replay back to back). The wait for the first byte is not timed: a
 * slow machine delays the answer, it does not cut it short.
 */
function rawExchange(port: number, request: Buffer, quietMs = 250): Promise<Buffer> {
  return new Promise(resolve => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks));
    };
    socket.on('data', chunk => {
      chunks.push(chunk);
      clearTimeout(timer);
      timer = setTimeout(done, quietMs);
    });
    socket.on('close', done);
    socket.on('error', done);
  });
}

/** The response with what legitimately differs between two sessions replaced: date, session id, SDK event ids. */
function normalize(response: Buffer, sessionId: string): string {
  let text = response.toString('latin1');
  text = text.replace(/^date: .*$/gim, 'date: <date>');
  text = text.split(sessionId).join('<session>');
  // SDK-format ids (<stream>_<ms>_<rand>) and chunked-encoding sizes, which follow their lengths.
  text = text.replace(/(?:_GET_stream|[0-9a-f-]{36})_\d{10,15}_[0-9a-z]+/g, '<event-id>');
  text = text.replace(/^[0-9a-f]+\r$/gm, '<chunk-size>\r');
  return text;
}

function getRequest(session: string, lastEventId: Buffer | undefined, protocolVersion = '2025-11-25'): Buffer {
  return Buffer.concat([
    Buffer.from(
      'GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n' +
        `Mcp-Session-Id: ${session}\r\nMcp-Protocol-Version: ${protocolVersion}\r\n`,
      'latin1',
    ),
    ...(lastEventId ? [Buffer.from('Last-Event-ID: ', 'latin1'), lastEventId, Buffer.from('\r\n', 'latin1')] : []),
    Buffer.from('Connection: close\r\n\r\n', 'latin1'),
  ]);
}

/** Payloads: raw header value bytes, built from the session's own cursor where that matters. */
const payloads: [string, (cursor: string) => Buffer][] = [
  ['a real cursor (control case)', c => Buffer.from(c, 'latin1')],
  ['CRLF then a forged header', c => Buffer.from(`${c}\r\nX-Injected: yes`, 'latin1')],
  [
    'CRLF CRLF then a smuggled request',
    c => Buffer.from(`${c}\r\n\r\nDELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1`, 'latin1'),
  ],
  ['a bare CR', c => Buffer.from(`${c}\rX-Injected: yes`, 'latin1')],
  ['a bare LF', c => Buffer.from(`${c}\nX-Injected: yes`, 'latin1')],
  ['a NUL byte', c => Buffer.from(`${c}\u0000tail`, 'latin1')],
  ['ANSI escapes', () => Buffer.from('\u001b[2J\u001b[31mred', 'latin1')],
  ['a folded header line', c => Buffer.from(`${c}\r\n folded`, 'latin1')],
  ['a second Last-Event-ID header', c => Buffer.from(`${c}\r\nLast-Event-ID: second`, 'latin1')],
  ['raw UTF-8 (read as latin-1 by node)', () => Buffer.from('💥-é-中-\u202e', 'utf8')],
  ['C1 control bytes', () => Buffer.from([0x61, 0x85, 0x9b, 0x9f, 0x62])],
  ['JSON and HTML metacharacters', () => Buffer.from('"}],"x":1,<script>alert(1)</script>%s%n', 'latin1')],
  ['15,000 bytes (under the header limit)', () => Buffer.from('A'.repeat(15_000), 'latin1')],
  ['20,000 bytes (over the header limit)', () => Buffer.from('A'.repeat(20_000), 'latin1')],
  ['only whitespace', () => Buffer.from('   ', 'latin1')],
];

describe.each(['sdk-in-memory', 'validating'] as const)('Last-Event-ID injection, %s store', kind => {
  let server: Awaited<ReturnType<typeof startSdkServer>>;
  let fw: Forkwatch;
  beforeAll(async () => {
    server = await startSdkServer(kind);
    fw = setupForkwatch({}, webStandard);
  });
  afterAll(async () => {
    await fw.teardown();
    await server.close();
  });

  test.each(payloads)(
    '%s: the same answer with and without forkwatch; spans bounded and printable',
    async (_, payload) => {
      const before = diagnostics.length;
      fw.resetSpans();
      const withFw = await server.newSession();
      const answeredWith = normalize(
        await rawExchange(server.port, getRequest(withFw.id, payload(withFw.cursor))),
        withFw.id,
      );

      fw.instrumentation.disable();
      try {
        const without = await server.newSession();
        const answeredWithout = normalize(
          await rawExchange(server.port, getRequest(without.id, payload(without.cursor))),
          without.id,
        );
        expect(answeredWith).toEqual(answeredWithout);
      } finally {
        fw.instrumentation.enable();
        fw.instrumentation.manuallyInstrument(webStandard);
      }
      expect(answeredWith).toMatch(/^HTTP\/1\.1 \d{3} /);
      // The server is still up and serving.
      const after = await server.newSession();
      expect(after.id).toMatch(/^[0-9a-f-]{36}$/);
      await sleep(20);
      expect(diagnostics.slice(before)).toEqual([]);
      expectPrintableSpans(fw.spans(), 300);
      for (const span of fw.spans('forkwatch.server.resume')) {
        const cursor = span.events[0]?.attributes?.['forkwatch.resume.cursor'];
        if (cursor !== undefined) expect(String(cursor).length).toBeLessThanOrEqual(256 + 20);
      }
    },
  );

  test('the control case is a real resume: forkwatch records it (so the comparisons above saw the patch at work)', async () => {
    fw.resetSpans();
    const session = await server.newSession();
    const answer = await rawExchange(server.port, getRequest(session.id, Buffer.from(session.cursor, 'latin1')));
    expect(answer.toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
    // The validating store replays the second notification after the cursor (the SDK's own store loses it: #943).
    if (kind === 'validating')
      expect(answer.toString('latin1')).toMatch(/id: _GET_stream_\d+_[0-9a-z]+\ndata: .*"n":2/);
    const spans = await fw.waitForSpans('forkwatch.server.resume', 1);
    expect(spans).toHaveLength(1);
    expect(spans[0]!.events[0]!.attributes!['forkwatch.resume.cursor']).toBe(session.cursor);
  });
});

describe('header values past any sane length, on a server that accepts 1 MiB of headers', () => {
  let server: Awaited<ReturnType<typeof startSdkServer>>;
  let fw: Forkwatch;
  beforeAll(async () => {
    server = await startSdkServer('validating', 1024 * 1024);
    fw = setupForkwatch({ captureRawSessionId: true }, webStandard);
  });
  afterAll(async () => {
    await fw.teardown();
    await server.close();
  });

  const HUGE_VERSION = `2025-11-25${'v'.repeat(59_990)}`;
  const HUGE_CURSOR = 'c'.repeat(100_000);
  test.each([
    ['a 60,000-character Mcp-Protocol-Version', (cursor: string) => [cursor, HUGE_VERSION] as const],
    ['a 100,000-character Last-Event-ID', () => [HUGE_CURSOR, '2025-11-25'] as const],
    ['both', () => [HUGE_CURSOR, HUGE_VERSION] as const],
  ])('%s: the same answer as bare, every span attribute clipped, no metric carries it', async (_, values) => {
    fw.resetSpans();
    const ask = async (session: { id: string; cursor: string }) => {
      const [cursor, version] = values(session.cursor);
      return normalize(
        await rawExchange(server.port, getRequest(session.id, Buffer.from(cursor, 'latin1'), version)),
        session.id,
      );
    };
    const answeredWith = await ask(await server.newSession());
    fw.instrumentation.disable();
    try {
      expect(answeredWith).toEqual(await ask(await server.newSession()));
    } finally {
      fw.instrumentation.enable();
      fw.instrumentation.manuallyInstrument(webStandard);
    }
    expect(answeredWith).toMatch(/^HTTP\/1\.1 \d{3} /);
    // The resume was recorded (so its attributes were there to check), each bounded.
    const [span] = await fw.waitForSpans('forkwatch.server.resume', 1);
    const [, version] = values('');
    const recorded = span!.attributes[ATTR.mcpProtocolVersion];
    expect(recorded).toBe(version.length > 32 ? `${version.slice(0, 32)}…(${version.length} chars)` : version);
    expectPrintableSpans(fw.spans(), 300);
    const metrics = await fw.metrics();
    expect(metrics).not.toContain('vvvvvvvvvv');
    expect(metrics).not.toContain('cccccccccc');
  });
});
