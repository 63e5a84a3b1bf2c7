/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Codecs for the servers people run in other languages, on ids shaped exactly as each producer writes them. The
 * formats were read in the producers' sources (December 2026 snapshots), named beside each sample:
 *
 * - Go, modelcontextprotocol/go-sdk 3d6450fc, mcp/streamable.go (`formatEventID`, `crand.Text()` stream ids)
 * - Rust, modelcontextprotocol/rust-sdk 4a738b9d, crates/rmcp/src/transport/streamable_http_server/session/local.rs
 *   (`EventId`); `0/0`, `0/1`, `0/999` are the cursors of crates/rmcp/tests/test_sse_concurrent_streams.rs
 * - C#, modelcontextprotocol/csharp-sdk 609499b2, src/ModelContextProtocol/Server/DistributedCacheEventIdFormatter.cs
 *   and DistributedCacheEventStreamStore.cs; session ids from StreamableHttpHandler.cs `MakeNewSessionId`
 *   (base64url of 16 random bytes), the GET stream `__get__` (StreamableHttpServerTransport.cs)
 * - Java, modelcontextprotocol/java-sdk 305e4cbd, mcp-core/.../spec/McpStreamableServerSession.java
 * - Kotlin, modelcontextprotocol/kotlin-sdk a06d699d, conformance-test/.../conformance/InMemoryEventStore.kt
 * - Python, modelcontextprotocol/python-sdk 57394b05 examples/servers/simple-streamablehttp/.../event_store.py and
 *   jlowin/fastmcp b14b137f src/fastmcp/server/event_store.py (`uuid4()`), examples/stories/sse_polling/event_store.py
 *   (store-wide integer); mark3labs/mcp-go 56af04b2 server/event_store.go (store-wide integer)
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  DensityWatch,
  type EventIdCodec,
  autoCodec,
  csharpCodec,
  decideFirstFrame,
  detectCodec,
  goSdkCodec,
  hexSequenceCodec,
  javaSdkCodec,
  kotlinCodec,
  resolveCodec,
  rmcpCodec,
} from '../../src/core';

const RUNS = { numRuns: 300 };
const UUID_A = '3b241101-e2bb-4255-8caf-4136c566a962';
const UUID_B = '9f8b6c2e-1d4a-4f3b-a2c1-7e5d9b0a8c34';
const never = () => false;
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** A Go POST stream id: 26 characters of RFC 4648 base32, as `crypto/rand.Text()` writes. */
const GO_STREAM = 'JBSWY3DPEHPK3PXPJBSWY3DPEH';
/** A C# session id (base64url of 16 bytes) and the GET stream, as the formatter encodes them. */
const CS_SESSION = b64('q1zq3hTzQnqB5Kj3d1p2xg');
const CS_GET = `${CS_SESSION}:${b64('__get__')}`;
const cs = (sequence: number, stream = CS_GET) => `${stream}:${sequence}`;

function verdict(cursor: string, firstId: string, seenDense = true, codec?: EventIdCodec) {
  return decideFirstFrame({ cursor, firstId, wasConsumed: never, sequenceSeenDense: seenDense, codec });
}

describe('real samples: auto detects each producer and reads stream and position', () => {
  test.each([
    // Go: the standalone stream is "" in every session; a POST stream is random base32.
    ['_0', 'go-sdk', { stream: '', sharedStream: true, sequence: 0, dense: true }],
    ['_4', 'go-sdk', { stream: '', sharedStream: true, sequence: 4, dense: true }],
    [`${GO_STREAM}_2`, 'go-sdk', { stream: GO_STREAM, sequence: 2, dense: true }],
    // rmcp: `<index>/<http_request_id>`, the index first.
    ['3/7', 'rmcp', { stream: '7', sharedStream: true, sequence: 3, dense: true }],
    ['0/999', 'rmcp', { stream: '999', sharedStream: true, sequence: 0, dense: true }],
    ['0/1', 'rmcp', { stream: '1', sharedStream: true, sequence: 0, dense: true }],
    // rmcp's common stream writes the bare index: `integer` reads it as the same sequence.
    ['5', 'integer', { sequence: 5, dense: true }],
    // C#: decimal sequence, the session kept in the stream key.
    [cs(9), 'csharp', { stream: CS_GET, sequence: 9, dense: true }],
    [cs(10), 'csharp', { stream: CS_GET, sequence: 10, dense: true }],
    [cs(1, `${CS_SESSION}:${b64('1')}`), 'csharp', { stream: `${CS_SESSION}:MQ==`, sequence: 1, dense: true }],
    // Java: `<transportId>_<UUID>`, no sequence.
    [`${UUID_A}_${UUID_B}`, 'java-sdk', { stream: UUID_A }],
    // Kotlin's conformance store: `<streamId>::<ms>_<Uuid>`.
    [
      `_GET_stream::1765000000000_${UUID_B}`,
      'kotlin',
      { stream: '_GET_stream', sharedStream: true, timeMs: 1765000000000 },
    ],
    [`${UUID_A}::1765000000000_${UUID_B}`, 'kotlin', { stream: UUID_A, timeMs: 1765000000000 }],
    // mcp-go and the Python SDK's story store: a store-wide integer.
    ['41', 'integer', { sequence: 41, dense: true }],
  ])('%s → %s', (id, name, decoded) => {
    expect(detectCodec(id)?.name).toBe(name);
    expect(autoCodec.decode(id)).toEqual(decoded);
    expect(resolveCodec(name as 'auto')!.decode(id)).toEqual(decoded);
  });

  test("Python's uuid4 ids (the SDK's example stores, FastMCP's EventStore) stay opaque", () => {
    expect(detectCodec(UUID_A)).toBeUndefined();
  });

  test.each([
    ['_04', goSdkCodec], // Go writes %d: no leading zeros
    ['jbswy3dpehpk3pxpjbswy3dpeh_2', goSdkCodec], // base32 is upper case
    ['JBSWY3DPEH_2', goSdkCodec], // 26 characters
    ['a_b_3', goSdkCodec],
    ['3/', rmcpCodec],
    ['03/7', rmcpCodec],
    ['3/7/1', rmcpCodec],
    [`${CS_GET}:009`, csharpCodec], // .NET writes {sequence} without padding
    [`${CS_GET}:a`, csharpCodec],
    [`:${b64('__get__')}:3`, csharpCodec], // no session
    ['abc:def:3', csharpCodec], // not padded base64
    [`${UUID_A}_${UUID_B}_1`, javaSdkCodec],
    [`${UUID_A}::176500000_${UUID_B}`, kotlinCodec], // 9-digit clock
  ])('%j is not in the format of %s', (id, codec) => {
    expect(codec.decode(id)).toBeUndefined();
  });
});

describe('never read backwards or in the wrong base', () => {
  test("C#: 9 → 10 and 99 → 100 are the next event, not 7 or 155 skipped (hex's reading)", () => {
    for (const [a, b] of [
      [9, 10],
      [99, 100],
      [999, 1000],
    ] as const) {
      expect(verdict(cs(a), cs(b))).toEqual({
        verdict: 'resumed',
        continuityVerified: true,
        skippedEvents: 0,
        codec: 'csharp',
      });
    }
    // What the hex reading made of it.
    const hex = verdict(cs(9), cs(10), true, hexSequenceCodec);
    expect(hex).toMatchObject({ verdict: 'resumed', skippedEvents: 6 });
  });

  test('C#: the density of a live stream is learned in decimal (9, 10, 11 steps by one)', () => {
    const watch = new DensityWatch(undefined);
    let density = watch.observe(cs(9), 'unseen');
    for (const n of [10, 11]) density = watch.observe(cs(n), density);
    expect(density).toBe('dense');
  });

  test('rmcp: `3/7` then `4/7` continues request 7; `4/8` is another request stream; `2/7` goes back', () => {
    expect(verdict('3/7', '4/7')).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      skippedEvents: 0,
      codec: 'rmcp',
    });
    expect(verdict('3/7', '4/8')).toEqual({ verdict: 'forked', reason: 'stream_changed', codec: 'rmcp' });
    expect(verdict('3/7', '2/7')).toEqual({ verdict: 'forked', reason: 'id_regressed', codec: 'rmcp' });
    // The common stream's bare index answering a request stream's cursor: another stream.
    expect(verdict('3/7', '5')).toEqual({ verdict: 'forked', reason: 'stream_changed', codec: 'rmcp' });
  });

  test('Go: `_4` then `_5` continues the standalone stream, `_3` restarted it, `_9` skipped 4', () => {
    expect(verdict('_4', '_5')).toMatchObject({ verdict: 'resumed', continuityVerified: true, skippedEvents: 0 });
    expect(verdict('_4', '_3')).toEqual({ verdict: 'forked', reason: 'id_regressed', codec: 'go-sdk' });
    expect(verdict('_4', '_9')).toMatchObject({ verdict: 'resumed', skippedEvents: 4 });
    // Skipped events only on proven density.
    expect(verdict('_4', '_9', false)).not.toHaveProperty('skippedEvents');
    expect(verdict('_4', `${GO_STREAM}_5`)).toEqual({ verdict: 'forked', reason: 'stream_changed', codec: 'go-sdk' });
  });

  test("Java: the transport id names the stream; Kotlin's shared `_GET_stream` proves nothing by matching", () => {
    expect(verdict(`${UUID_A}_${UUID_B}`, `${UUID_A}_${UUID_A}`)).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      codec: 'java-sdk',
    });
    expect(verdict(`${UUID_A}_${UUID_B}`, `${UUID_B}_${UUID_A}`)).toMatchObject({ verdict: 'forked' });
    expect(verdict(`_GET_stream::1765000000000_${UUID_A}`, `_GET_stream::1765000000001_${UUID_B}`)).toEqual({
      verdict: 'resumed',
      continuityVerified: false,
      codec: 'kotlin',
    });
  });

  test("a C# look-alike: a hex counter's `…:a` after `…:9` on the same stream is no proof of another log", () => {
    expect(verdict(cs(9), `${CS_GET}:a`)).toEqual({ verdict: 'resumed', continuityVerified: false, codec: 'csharp' });
    // Another stream in another format still is.
    expect(verdict(cs(9), `${UUID_A}:a`)).toEqual({ verdict: 'forked', reason: 'stream_changed', codec: 'csharp' });
  });
});

const base32 = fc.string({
  minLength: 26,
  maxLength: 26,
  unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'),
});
const position = fc.integer({ min: 0, max: 999_999_999_999_999 });
/** Session and stream ids as C# hands them to the formatter: base64url session ids, request ids, `__get__`. */
const csStream = fc
  .tuple(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.oneof(fc.constant('__get__'), fc.nat().map(String)))
  .map(([bytes, stream]) => `${b64(Buffer.from(bytes).toString('base64url'))}:${b64(stream)}`);

/** Each producer's ids for (stream, position), with the codec that must read them. */
const producers = [
  { name: 'go-sdk', stream: fc.oneof(fc.constant(''), base32), id: (s: string, n: number) => `${s}_${n}` },
  { name: 'rmcp', stream: fc.nat().map(String), id: (s: string, n: number) => `${n}/${s}` },
  { name: 'csharp', stream: csStream, id: (s: string, n: number) => `${s}:${n}` },
] as const;

describe.each(producers)('$name ids, any stream and positions', ({ name, stream, id }) => {
  test('round trip: auto detects the producer and gives back stream and position', () => {
    fc.assert(
      fc.property(stream, position, (s, n) => {
        expect(detectCodec(id(s, n))?.name).toBe(name);
        expect(autoCodec.decode(id(s, n))).toMatchObject({ stream: s, sequence: n, dense: true });
      }),
      RUNS,
    );
  });

  test('a later position is a resume with the exact count skipped, an earlier or equal one a regression', () => {
    fc.assert(
      fc.property(stream, position, position, (s, a, b) => {
        fc.pre(a !== b);
        const v = verdict(id(s, a), id(s, b));
        if (b > a)
          expect(v).toEqual({ verdict: 'resumed', continuityVerified: true, skippedEvents: b - a - 1, codec: name });
        else expect(v).toEqual({ verdict: 'forked', reason: 'id_regressed', codec: name });
      }),
      RUNS,
    );
  });
});
