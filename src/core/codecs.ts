/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Event-id codecs: what an opaque MCP event id tells about the stream it belongs to and its position.
 *
 * The spec only promises that ids are unique per session and (2025-11-25) SHOULD encode their stream, so each
 * codec knows one producer's format. A codec answers `undefined` for an id that is not in its format.
 */

export interface DecodedEventId {
  /** The stream the id belongs to, when the format encodes it. */
  stream?: string;
  /**
   * True when every session's stream of this kind has the same key (the SDK's standalone `_GET_stream`): a match
   * then says nothing about continuity, only a mismatch does.
   */
  sharedStream?: boolean;
  /** Position in a strictly increasing sequence (per stream, or per log): a smaller value means an older event. */
  sequence?: number;
  /** True when the sequence grows by exactly one per event on the stream, so skipped events can be counted. */
  dense?: boolean;
  /** Producer wall-clock time embedded in the id. Only a hint: clocks jump, so it never decides a fork alone. */
  timeMs?: number;
  /**
   * True when `stream` and `sequence` are read from the id's shape alone (`auto`'s prefix-sequence reading), not
   * from a known producer's format: a larger number under the same prefix confirms continuity, but nothing here
   * proves a fork (a random or clock-like suffix would), so a smaller number or another prefix stays unverified.
   */
  learned?: boolean;
}

export interface EventIdCodec {
  readonly name: string;
  decode(id: string): DecodedEventId | undefined;
}

export type BuiltinCodecName =
  | 'auto'
  | 'integer'
  | 'sdk'
  | 'mcp-proxy'
  | 'hex-sequence'
  | 'go-sdk'
  | 'rmcp'
  | 'csharp'
  | 'java-sdk'
  | 'kotlin'
  | 'opaque';

const INTEGER = /^(?:0|[1-9][0-9]{0,14})$/;
/** `<streamId>_<epochMs>_<rand>`: @modelcontextprotocol/sdk's InMemoryEventStore; streamId may itself hold `_`. */
const SDK = /^(.+)_([0-9]{10,15})_([0-9a-z]{1,16})$/;
/** `<streamId>_<epochMs>_<counter base36 x4>_<rand x3>`: mcp-proxy / fastmcp. */
const MCP_PROXY = /^(.+)_([0-9]{10,15})_([0-9a-z]{4})_([0-9a-z]{3})$/;
/**
 * `<streamId>:<hex sequence>`: Cloudflare agents' DurableObjectEventStore and similar per-stream counters.
 * Counters are often zero-padded to 16 digits; leading zeros are skipped, and at most 13 significant digits
 * (52 bits) are accepted so the sequence stays an exact number.
 */
const HEX_SEQUENCE = /^(.+):0*([0-9a-fA-F]{1,13})$/;

export const integerCodec: EventIdCodec = {
  name: 'integer',
  decode(id) {
    return INTEGER.test(id) ? { sequence: Number(id), dense: true } : undefined;
  },
};

/** The SDK's standalone GET stream: the same stream id in every session. */
export const SDK_STANDALONE_STREAM = '_GET_stream';

export const sdkCodec: EventIdCodec = {
  name: 'sdk',
  decode(id) {
    const m = SDK.exec(id);
    if (!m) return undefined;
    return m[1] === SDK_STANDALONE_STREAM
      ? { stream: m[1], sharedStream: true, timeMs: Number(m[2]) }
      : { stream: m[1], timeMs: Number(m[2]) };
  },
};

export const mcpProxyCodec: EventIdCodec = {
  name: 'mcp-proxy',
  decode(id) {
    const m = MCP_PROXY.exec(id);
    if (!m) return undefined;
    // The counter is per process and wraps, so it orders events within a millisecond but is no sequence.
    return m[1] === SDK_STANDALONE_STREAM
      ? { stream: m[1], sharedStream: true, timeMs: Number(m[2]) }
      : { stream: m[1], timeMs: Number(m[2]) };
  },
};

export const hexSequenceCodec: EventIdCodec = {
  name: 'hex-sequence',
  decode(id) {
    const m = HEX_SEQUENCE.exec(id);
    return m ? { stream: m[1], sequence: parseInt(m[2]!, 16), dense: true } : undefined;
  },
};

/*
 * Servers in other languages, each format read in the producer's own source (December 2026 snapshots; the samples in
 * test/core/codecs.languages.test.ts come from the same files). Python's servers need no codec of their own: the
 * official SDK's example stores and FastMCP's EventStore (jlowin/fastmcp src/fastmcp/server/event_store.py) mint
 * `uuid4()` ids (opaque), and the SDK's sse_polling story store (examples/stories/sse_polling/event_store.py) and
 * mcp-go's InMemoryEventStore (server/event_store.go) a store-wide integer, which `integer` reads and
 * core/density.ts learns sparse.
 */

/** A decimal without leading zeros that stays a safe integer. */
const DECIMAL = '(0|[1-9][0-9]{0,14})';
/**
 * modelcontextprotocol/go-sdk mcp/streamable.go `formatEventID`: `<streamID>_<index>`, the index dense per stream
 * (the priming event included). The standalone GET stream's id is `""` (ids `_0`, `_1`, …) in every session; a
 * POST stream's is `crypto/rand.Text()` (26 characters of RFC 4648 base32; the same alphabet and length as the
 * `randText` it replaced in go-sdk #773). Go's own parser splits on `_`, so a stream id never holds one.
 */
const GO_SDK = new RegExp(`^((?:[A-Z2-7]{26})?)_${DECIMAL}$`);
/**
 * modelcontextprotocol/rust-sdk crates/rmcp/src/transport/streamable_http_server/session/local.rs `EventId`:
 * `<index>` on the session's common (GET) stream, `<index>/<http_request_id>` on a request's stream; the index is
 * dense per stream, the request id a per-session counter. The index comes first: reading the request id as the
 * sequence would compare two streams' positions.
 */
const RMCP = new RegExp(`^${DECIMAL}(?:/${DECIMAL})?$`);
/** Standard base64 as .NET's `Convert.ToBase64String` writes it: padded, length a multiple of 4. */
const BASE64 = '(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?';
/**
 * modelcontextprotocol/csharp-sdk src/ModelContextProtocol/Server/DistributedCacheEventIdFormatter.cs:
 * `<base64(sessionId)>:<base64(streamId)>:<sequence>`, the sequence a decimal `long` counted from 1 per stream
 * writer (DistributedCacheEventStreamStore.cs). Decimal, never hex: `…:9` then `…:10` is the next event.
 */
const CSHARP = new RegExp(`^((?=[A-Za-z0-9+/])${BASE64}:${BASE64}):${DECIMAL}$`);
const UUID_TEXT = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/**
 * modelcontextprotocol/java-sdk mcp-core/src/main/java/io/modelcontextprotocol/spec/McpStreamableServerSession.java
 * `McpStreamableServerSessionStream`: `<transportId>_<UUID>`, both `UUID.randomUUID()`, the first naming the SSE
 * stream. No sequence.
 */
const JAVA_SDK = new RegExp(`^(${UUID_TEXT})_${UUID_TEXT}$`);
/**
 * modelcontextprotocol/kotlin-sdk conformance-test/src/main/kotlin/io/modelcontextprotocol/kotlin/sdk/conformance/
 * InMemoryEventStore.kt (the SDK ships an `EventStore` interface, no store): `<streamId>::<epochMs>_<Uuid>`, the
 * stream before the first `::` (its `getStreamIdForEventId`); the standalone stream is `_GET_stream`
 * (kotlin-sdk-server StreamableHttpServerTransport.kt `STANDALONE_SSE_STREAM_ID`).
 */
const KOTLIN = new RegExp(`^(.+?)::([0-9]{10,15})_${UUID_TEXT}$`);

export const goSdkCodec: EventIdCodec = {
  name: 'go-sdk',
  decode(id) {
    const m = GO_SDK.exec(id);
    if (!m) return undefined;
    // The standalone stream's key is `""` in every session: a match proves nothing, the index does.
    return m[1] === ''
      ? { stream: '', sharedStream: true, sequence: Number(m[2]), dense: true }
      : { stream: m[1], sequence: Number(m[2]), dense: true };
  },
};

export const rmcpCodec: EventIdCodec = {
  name: 'rmcp',
  decode(id) {
    const m = RMCP.exec(id);
    if (!m) return undefined;
    // Request ids count from 0 in every session, and the common stream has no id at all: keys shared by sessions.
    return { stream: m[2] === undefined ? '' : m[2], sharedStream: true, sequence: Number(m[1]), dense: true };
  },
};

/** `auto` claims only `<index>/<request>` for rmcp: a bare `<index>` is an `integer`, which reads it the same way. */
const rmcpRequestStreamCodec: EventIdCodec = {
  name: 'rmcp',
  decode(id) {
    return id.includes('/') ? rmcpCodec.decode(id) : undefined;
  },
};

export const csharpCodec: EventIdCodec = {
  name: 'csharp',
  decode(id) {
    const m = CSHARP.exec(id);
    // The stream key keeps the session: the same stream name in another session is another log.
    return m ? { stream: m[1], sequence: Number(m[2]), dense: true } : undefined;
  },
};

export const javaSdkCodec: EventIdCodec = {
  name: 'java-sdk',
  decode(id) {
    const m = JAVA_SDK.exec(id);
    return m ? { stream: m[1] } : undefined;
  },
};

export const kotlinCodec: EventIdCodec = {
  name: 'kotlin',
  decode(id) {
    const m = KOTLIN.exec(id);
    if (!m) return undefined;
    return m[1] === SDK_STANDALONE_STREAM
      ? { stream: m[1], sharedStream: true, timeMs: Number(m[2]) }
      : { stream: m[1], timeMs: Number(m[2]) };
  },
};

/**
 * `<prefix><separator><decimal>`: a prefix ending in `-`, `_`, `.`, `/`, `#` or `@`, then a decimal counter without
 * leading zeros and with at most 9 digits (`event-1`, `event-2`, … of the MCP conformance suite's reference
 * server). Ten digits and more look like a clock (epoch seconds or milliseconds) and stay opaque, as do zero-padded
 * numbers and hex or UUID tails (`…-9afb-f4c8996fb924`), whose digits follow a letter.
 */
const PREFIX_SEQUENCE = /^(.*[-_./#@])(0|[1-9][0-9]{0,8})$/s;

/** `auto` only, tried last: the prefix is the stream, the number a sequence learned from the shape (`learned`). */
export const prefixSequenceCodec: EventIdCodec = {
  name: 'prefix-sequence',
  decode(id) {
    const m = PREFIX_SEQUENCE.exec(id);
    return m ? { stream: m[1], sequence: Number(m[2]), learned: true } : undefined;
  },
};

export const opaqueCodec: EventIdCodec = {
  name: 'opaque',
  decode() {
    return undefined;
  },
};

/**
 * Most specific first: an mcp-proxy id also matches the looser SDK pattern's shape rules only by accident. The
 * learned prefix-sequence reading comes last, for ids no producer format claims.
 */
const AUTO_ORDER: readonly EventIdCodec[] = [
  integerCodec,
  mcpProxyCodec,
  sdkCodec,
  kotlinCodec,
  javaSdkCodec,
  // Before hex-sequence, which would read C#'s decimal sequence as hex; C# never zero-pads, hex counters often do.
  csharpCodec,
  hexSequenceCodec,
  // Before the learned reading, which takes `3/7` for stream `3/` and sequence 7, and `_4` for a learned prefix.
  rmcpRequestStreamCodec,
  goSdkCodec,
  prefixSequenceCodec,
];

/**
 * A built-in format whose ids the codec's can be mistaken for: `auto` reads a C# id whose sequence has no hex letter
 * as `csharp`, while a hex counter with a base64-looking stream key writes `…:9` then `…:a`. A first id the
 * look-alike reads on the cursor's stream is then no proof of another log.
 */
export function lookAlikeOf(codec: EventIdCodec): EventIdCodec | undefined {
  return codec === csharpCodec ? hexSequenceCodec : undefined;
}

/**
 * False when no codec of `auto` that reads a dense sequence (integer, csharp, hex-sequence, rmcp, go-sdk) can read
 * the id: a necessary condition of each one's pattern above, checked without a regular expression. Each needs a `:`
 * (csharp, hex-sequence) or else ends in decimal digits that follow the id's start (integer; rmcp with its `/`) or a
 * `_` at index 0 or 26 (go-sdk: an empty or 26-character stream key). The SDK's, mcp-proxy's, Kotlin's and Java's ids
 * (a UUID or `_GET_stream` first, then a letter or a `_`) never pass, so a connection of theirs runs no pattern to
 * learn that its numbering is not dense (core/density.ts): the first regular expression run after the host's other
 * work cost several microseconds, once per stream of every short session (issue 50).
 */
export function mayReadDense(id: string): boolean {
  if (id.includes(':')) return true;
  const n = id.length;
  // Where the decimal tail starts: after go-sdk's `_`, else at the start (integer, rmcp's `<index>/<request>`).
  const from = id.charCodeAt(0) === 0x5f ? 1 : n > 27 && id.charCodeAt(26) === 0x5f ? 27 : 0;
  if (from === n) return false;
  for (let i = from; i < n; i++) {
    const c = id.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) continue;
    if (c === 0x2f && from === 0) continue;
    return false;
  }
  return true;
}

/** Picks the first built-in codec that understands the id. */
export function detectCodec(id: string): EventIdCodec | undefined {
  for (const codec of AUTO_ORDER) {
    // Detected from a request stream's id, rmcp's codec then reads the common stream's bare indexes too.
    if (codec.decode(id) !== undefined) return codec === rmcpRequestStreamCodec ? rmcpCodec : codec;
  }
  return undefined;
}

/**
 * `auto` decodes with whichever built-in codec matches. The verdict then decodes the first frame's id with the
 * codec that matched the cursor, so a first id in another format reads as another log.
 */
export const autoCodec: EventIdCodec = {
  name: 'auto',
  decode(id) {
    return detectCodec(id)?.decode(id);
  },
};

const BUILTIN: Record<BuiltinCodecName, EventIdCodec> = {
  auto: autoCodec,
  integer: integerCodec,
  sdk: sdkCodec,
  'mcp-proxy': mcpProxyCodec,
  'hex-sequence': hexSequenceCodec,
  'go-sdk': goSdkCodec,
  rmcp: rmcpCodec,
  csharp: csharpCodec,
  'java-sdk': javaSdkCodec,
  kotlin: kotlinCodec,
  opaque: opaqueCodec,
};

export const BUILTIN_CODEC_NAMES = Object.keys(BUILTIN) as BuiltinCodecName[];

/** Every built-in codec that reads a format (not `auto`, not `opaque`), the learned prefix reading included. */
export const FORMAT_CODECS: readonly EventIdCodec[] = [
  ...Object.values(BUILTIN).filter(codec => codec !== autoCodec && codec !== opaqueCodec),
  prefixSequenceCodec,
];

export function isBuiltinCodecName(name: string): name is BuiltinCodecName {
  return Object.hasOwn(BUILTIN, name);
}

/** Resolves a codec setting (a built-in name or a user codec) to a codec; unknown names give `undefined`. */
export function resolveCodec(setting: BuiltinCodecName | EventIdCodec | undefined): EventIdCodec | undefined {
  if (setting === undefined) return autoCodec;
  if (typeof setting === 'string') return isBuiltinCodecName(setting) ? BUILTIN[setting] : undefined;
  if (setting && typeof setting.decode === 'function') return setting;
  return undefined;
}

/** Runs a codec without letting a user codec's exception or odd result escape. */
export function safeDecode(codec: EventIdCodec, id: string): DecodedEventId | undefined {
  try {
    const decoded = codec.decode(id);
    return decoded && typeof decoded === 'object' ? decoded : undefined;
  } catch {
    return undefined;
  }
}
