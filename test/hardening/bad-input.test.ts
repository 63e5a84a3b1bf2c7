/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Bad input on the client path, through the real SDK client and a real HTTP server on 127.0.0.1: 1 MB ids, binary,
 * unicode and control-character ids, malformed SSE. forkwatch never throws into the host, never alters what the
 * application receives (each case is played without and with forkwatch and compared), keeps a bounded digest of
 * what it must remember, and puts only bounded, printable values on spans.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { eventIdKey, isOversizedKey } from '../../src/core';
import { type ScriptedServer, frame, openSse, startScriptedServer } from '../support/scripted-mcp-server';
import {
  type App,
  type Forkwatch,
  type ReplayServer,
  SENTINEL_FRAME,
  clientOutcomes,
  connectApp,
  diagnostics,
  expectPrintableSpans,
  playBothWays,
  referenceLastId,
  setupForkwatch,
  startReplayServer,
  waitFor,
} from './support';

const encoder = new TextEncoder();
const MB = 1 << 20;
const HUGE_ID = 'x'.repeat(MB);
const bytes = (...parts: (string | Uint8Array)[]) => {
  const encoded = parts.map(p => (typeof p === 'string' ? encoder.encode(p) : p));
  const out = new Uint8Array(encoded.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of encoded) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
};
/** Splits bytes into chunks of `size` (the server pauses between chunks). */
const chunksOf = (all: Uint8Array, size = 4096) => {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < all.length; i += size) chunks.push(all.slice(i, i + size));
  return chunks;
};

let fw: Forkwatch;
beforeAll(() => {
  fw = setupForkwatch({ verdictTimeoutMs: 300 });
});
afterAll(async () => {
  await fw.teardown();
});

describe('played without and with forkwatch: the app sees the same, forkwatch keeps what the SDK keeps', () => {
  let server: ReplayServer;
  beforeAll(async () => {
    server = await startReplayServer('bad-input-session');
  });
  afterAll(async () => {
    await server.close();
  });

  /** Plays the bytes both ways; returns what the app saw. */
  async function same(all: Uint8Array, chunkSize?: number) {
    const before = diagnostics.length;
    const chunks = chunksOf(bytes(all, SENTINEL_FRAME), chunkSize);
    const { bare, patched } = await playBothWays(server, fw, { chunks });
    expect(patched).toEqual(bare);
    expect(diagnostics.slice(before)).toEqual([]);
    const lastId = referenceLastId(chunks);
    const record = fw.instrumentation.clientLedger.peek('bad-input-session');
    expect(record?.lastConsumedId).toBe(lastId === undefined ? undefined : eventIdKey(lastId));
    return { seen: bare, record };
  }

  test('a 1 MB id mid-stream: delivered as without forkwatch; forkwatch keeps a digest of a few dozen bytes', async () => {
    const { seen } = await same(bytes(frame('1', 1), frame(HUGE_ID, 2), frame('3', 3)), 64 * 1024);
    expect(seen.notifications).toHaveLength(4);
    expect(seen.resumeCursor).toBe('3');
  });

  test('a 1 MB id as the last id: the SDK resumes with it (431); forkwatch holds its digest, not the id', async () => {
    const { seen, record } = await same(bytes(frame('1', 1), frame(HUGE_ID, 2)), 64 * 1024);
    expect(seen.notifications).toHaveLength(3);
    expect(seen.errors.join('\n')).toMatch(/Request Header Fields Too Large/);
    expect(isOversizedKey(record!.lastConsumedId!)).toBe(true);
    expect(record!.lastConsumedId!.length).toBeLessThan(64);
  });

  const nastyIds: [string, string | Uint8Array][] = [
    ['C0, ESC, DEL and C1 controls', 'ctl-\u0001\u0007\u001b[31m\u007f\u009b-x'],
    ['a tab inside', 'tab\there'],
    ['latin-1 letters', 'latin1-é-ÿ'],
    ['an emoji (outside latin-1: no valid header value)', 'emoji-💥-\u{1F600}'],
    ['a bidi override', 'rtl-\u202e-gnp.exe'],
    ['a line separator', 'ls-\u2028-ps-\u2029-nel-\u0085'],
    ['a BOM inside', '\uFEFF-bom'],
    ['a NUL (the parser ignores the id)', 'nul-\u0000-inside'],
    ['JSON, HTML and format-string metacharacters', '"}],"x":1,<script>{{7*7}}${x}%s%n\\'],
    ['invalid UTF-8 bytes', Uint8Array.of(0x69, 0x6e, 0x76, 0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80)],
    ['4000 characters (under the 4 KiB cap)', 'y'.repeat(4000)],
  ];
  test.each(nastyIds)('an id with %s: delivered as without forkwatch', async (_, id) => {
    const { seen } = await same(
      bytes(
        frame('1', 1),
        'id: ',
        id,
        '\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":2}}}\n\n',
      ),
    );
    expect(seen.notifications).toHaveLength(3);
  });

  const malformed: [string, string | Uint8Array][] = [
    ['garbage lines between frames', `garbage\nx: y\n\u0001\u0002\n${frame('1', 1)}more garbage\n\n${frame('2', 2)}`],
    [
      'no blank line between two frames (one frame, two data lines, the last id)',
      'id: 1\ndata: {"a":\nid: 2\ndata: 1}\n\n',
    ],
    [
      'a frame truncated before its blank line, then a new frame',
      `${frame('1', 1)}id: 2\ndata: {"jsonrpc":"2.0","meth`,
    ],
    ['CR-only line ends', frame('1', 1).replace(/\n/g, '\r') + frame('2', 2).replace(/\n/g, '\r')],
    ['CRLF line ends split between chunks', frame('1', 1).replace(/\n/g, '\r\n')],
    ['a BOM, then a frame', `\uFEFF${frame('1', 1)}`],
    [
      'two id lines in one frame (the last wins), then an empty id',
      `id: a\nid: b\n${frame(undefined, 1)}id:\n${frame(undefined, 2)}`,
    ],
    ['lines without a colon, and unknown fields', `id\ndata\nfoo\nfoo: bar\nretry: nope\n\n${frame('1', 1)}`],
    ['data that is not JSON-RPC', `data: not json\n\ndata: {"jsonrpc":"1.0"}\n\n${frame('1', 1)}`],
    ['a 1 MB comment line', `:${'c'.repeat(MB)}\n${frame('1', 1)}`],
    ['a 1 MB line without a colon', `${'f'.repeat(MB)}\n\n${frame('1', 1)}`],
    [
      'a 1 MB data line (a notification with a 1 MB string)',
      frame('1', 1).replace('"n":1', `"n":1,"pad":"${'p'.repeat(MB)}"`),
    ],
    ['an id line that never ends until the stream does', `${frame('1', 1)}id: ${'z'.repeat(8192)}`],
  ];
  test.each(malformed)('malformed SSE, %s: the app sees the same', async (_, body) => {
    await same(bytes(body), 1000);
  });
});

describe('resumes with bad ids: never forked, spans bounded and printable', () => {
  let server: ScriptedServer;
  const apps: App[] = [];
  beforeEach(async () => {
    server = await startScriptedServer();
    fw.resetSpans();
    // Every scripted server names its session the same: a new test is a new session.
    fw.instrumentation.clientLedger.clear();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map(a => a.close()));
    await server.close();
  });

  test('the first frame of a resumed stream carries a 1 MB id: resumed (unverified), the span shows a digest', async () => {
    server.scripts.push(
      res => {
        openSse(res);
        res.write(frame('cursor-1', 1));
        setTimeout(() => res.socket?.destroy(), 30);
      },
      res => {
        openSse(res);
        res.write(frame(HUGE_ID, 2) + frame('cursor-3', 3));
      },
    );
    const app = await connectApp(server.url);
    apps.push(app);
    await waitFor('the three frames', () => app.seqs.length === 3);
    expect(app.seqs).toEqual([1, 2, 3]);
    await waitFor('the verdict', () => fw.spans('forkwatch.client.resume').length === 1);
    // Opaque ids cannot prove continuity: accepted, not counted lossless.
    expect(clientOutcomes(fw)).toEqual(['unverified']);
    const first = fw.spans()[0]!.events.find(e => e.name === 'forkwatch.resume.first_frame')!.attributes!;
    expect(String(first['forkwatch.resume.first_event_id'])).toMatch(/^<oversized id: 1048576B:[0-9a-z]+>$/);
    expectPrintableSpans(fw.spans());
    expect(fw.instrumentation.clientLedger.peek('session-under-test')?.lastConsumedId).toBe('cursor-3');
  });

  const cursors: [string, string | Uint8Array, string[]][] = [
    // fetch refuses header values outside latin-1: the reconnect fails before any request.
    ['an emoji', 'emoji-💥', ['failed']],
    ['a bidi override', 'rtl-\u202e-x', ['failed']],
    ['a line separator', 'ls-\u2028', ['failed']],
    // fetch refuses control characters too.
    ['C0 and C1 controls and ESC', 'ctl-\u0001\u001b[2J\u009b', ['failed']],
    // latin-1 values are sent, and the server answers; opaque ids cannot prove continuity.
    ['latin-1 letters', 'latin1-é-ÿ', ['unverified']],
    ['invalid UTF-8 bytes', Uint8Array.of(0x62, 0x61, 0x64, 0xff, 0xc0, 0x80), ['failed']],
    ['metacharacters', '"}]<b>%s${x}', ['unverified']],
    ['4000 characters', 'y'.repeat(4000), ['unverified']],
  ];
  test.each(cursors)('a resume from a cursor with %s: never forked', async (_, id, expected) => {
    server.scripts.push(
      res => {
        openSse(res);
        res.write(
          bytes(
            'id: ',
            id,
            `\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { n: 1 } } })}\n\n`,
          ),
        );
        setTimeout(() => res.socket?.destroy(), 30);
      },
      res => {
        openSse(res);
        res.write(frame('next-2', 2));
      },
    );
    const app = await connectApp(server.url, {
      reconnect: {
        initialReconnectionDelay: 10,
        maxReconnectionDelay: 10,
        reconnectionDelayGrowFactor: 1,
        maxRetries: 1,
      },
    });
    apps.push(app);
    await waitFor('a verdict', () => fw.spans('forkwatch.client.resume').length >= 1);
    const outcomes = clientOutcomes(fw);
    expect(outcomes.every(o => !o.startsWith('forked'))).toBe(true);
    expect(expected).toContain(outcomes[0]);
    expectPrintableSpans(fw.spans());
    if (outcomes[0] === 'unverified') await waitFor('the resumed frame', () => app.seqs.includes(2));
    expect(app.seqs[0]).toBe(1);
  });
});
