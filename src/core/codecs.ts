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

export type BuiltinCodecName = 'auto' | 'integer' | 'sdk' | 'mcp-proxy' | 'hex-sequence' | 'opaque';

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
  hexSequenceCodec,
  prefixSequenceCodec,
];

/** Picks the first built-in codec that understands the id. */
export function detectCodec(id: string): EventIdCodec | undefined {
  for (const codec of AUTO_ORDER) {
    if (codec.decode(id) !== undefined) return codec;
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
  opaque: opaqueCodec,
};

export const BUILTIN_CODEC_NAMES = Object.keys(BUILTIN) as BuiltinCodecName[];

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
