/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Event ids are opaque strings chosen by the server. The detector compares them, hashes them and sometimes
 * shows them on spans, so every id first goes through `eventIdKey`, which bounds what is kept of it.
 */
import { PEER_VALUE_MAX_CHARS, clip } from './clip';

/** Ids longer than this many UTF-8 bytes are kept as a fixed-size digest, never verbatim. */
export const MAX_EVENT_ID_BYTES = 4096;

/** Prefix of the digest key of an oversized id: no real id can start with NUL (SSE drops ids containing NUL). */
const OVERSIZED_PREFIX = '\u0000oversized:';

/**
 * 53-bit FNV-1a style hash of a string: two 32-bit lanes with different offsets, combined into a safe integer.
 * Allocation-free; used for the per-session duplicate ring, where a collision costs one false duplicate in ~2^53.
 */
export function hashEventId(id: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x9e3779b9;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  // 32 bits of lane a, 21 bits of lane b: stays within Number.MAX_SAFE_INTEGER.
  return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
}

/** 32-bit FNV-1a over bytes, continued from `hash`: the digest of oversized ids. */
export function fnv1aBytes(bytes: Uint8Array, start: number, end: number, hash = 0x811c9dc5): number {
  for (let k = start; k < end; k++) hash = Math.imul(hash ^ bytes[k]!, 0x01000193);
  return hash;
}

/** The key of an id over the byte limit; the frame observer builds the same key from the raw bytes. */
export function oversizedIdKey(byteLength: number, fnv32: number): string {
  return `${OVERSIZED_PREFIX}${byteLength}B:${(fnv32 >>> 0).toString(36)}`;
}

const encoder = new TextEncoder();

/** The form of an id that the detector keeps and compares: the id itself, or a digest when it is oversized. */
export function eventIdKey(id: string): string {
  // Three bytes per UTF-16 unit at most: short ids need no encoding.
  if (id.length * 3 <= MAX_EVENT_ID_BYTES) return id;
  const bytes = encoder.encode(id);
  if (bytes.length <= MAX_EVENT_ID_BYTES) return id;
  return oversizedIdKey(bytes.length, fnv1aBytes(bytes, 0, bytes.length));
}

export function isOversizedKey(key: string): boolean {
  return key.startsWith(OVERSIZED_PREFIX);
}

/** A printable, bounded rendering of an id for spans and diagnostics. */
export function displayEventId(
  id: string | undefined,
  maxLength: number = PEER_VALUE_MAX_CHARS.eventId,
): string | undefined {
  if (id === undefined) return undefined;
  if (isOversizedKey(id)) return `<oversized id: ${id.slice(OVERSIZED_PREFIX.length)}>`;
  return clip(id, maxLength);
}
