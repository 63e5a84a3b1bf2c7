/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A cursor that never existed but looks like a real one, so that a server which only checks the format is caught
 * accepting it: every character keeps its class (hex digits stay hex digits, other letters stay letters, case is
 * kept), separators stay where they are.
 *
 * It must never be a plausible next id of the real cursor by any codec: a correct server answers a cursor a little
 * ahead on the same stream as one it may have issued meanwhile (Go's SDK serves `_5` after `_4` a 200 and the live
 * tail), and "unknown cursor refused" would fail a correct server. So the cursor names a stream that never existed
 * where the format has streams, and a position far ahead where it has none.
 */
import {
  type DecodedEventId,
  FORMAT_CODECS,
  csharpCodec,
  detectCodec,
  goSdkCodec,
  integerCodec,
  rmcpCodec,
} from '../../core/codecs';

/** When the server gave no id to imitate. */
export const SHAPELESS_BOGUS_CURSOR = 'forkwatch-probe-0000-never-issued';

/** Far enough ahead that no server issued it since the real cursor. */
const FAR_AHEAD = 1e12;
/** A step at least this large on the same stream is no plausible next id. */
const IMPLAUSIBLE_STEP = 1e9;
/** A Go POST stream id (26 characters of base32) that `crypto/rand.Text()` is never going to draw for the probe. */
const GO_NEVER_STREAM = 'FORKWATCHPROBENEVERISSUEDZ';
const CSHARP_NEVER_STREAM = Buffer.from('forkwatch-probe-never-issued', 'utf8').toString('base64');

export function bogusCursor(realCursor: string | undefined, seen: ReadonlySet<string> = new Set()): string {
  if (realCursor === undefined || realCursor === '') return SHAPELESS_BOGUS_CURSOR;
  const candidates = [...shapedCandidates(realCursor)];
  for (let shift = 1; shift < 16; shift++) candidates.push(rotate(realCursor, shift));
  candidates.push(`${realCursor}0`);
  for (const candidate of candidates) {
    if (candidate !== realCursor && !seen.has(candidate) && !isPlausibleNext(realCursor, candidate)) return candidate;
  }
  return SHAPELESS_BOGUS_CURSOR;
}

/** True when some codec reads `candidate` as the real cursor's stream, at or near a later position. */
export function isPlausibleNext(real: string, candidate: string): boolean {
  return FORMAT_CODECS.some(codec => {
    const before = codec.decode(real);
    const after = codec.decode(candidate);
    return before !== undefined && after !== undefined && plausiblyFollows(before, after);
  });
}

function plausiblyFollows(before: DecodedEventId, after: DecodedEventId): boolean {
  if (before.stream !== after.stream) return false;
  if (before.sequence === undefined || after.sequence === undefined) return true;
  const step = after.sequence - before.sequence;
  return step > 0 && step < IMPLAUSIBLE_STEP;
}

/** Per format: the same shape on a stream that never existed, or a position far ahead (no stream in the format). */
function shapedCandidates(real: string): string[] {
  const codec = detectCodec(real);
  const decoded = codec?.decode(real);
  if (codec === undefined || decoded === undefined) return [];
  const sequence = decoded.sequence ?? 0;
  switch (codec) {
    case integerCodec:
      return [String(sequence + FAR_AHEAD)];
    case goSdkCodec: {
      const stream = decoded.stream === '' ? GO_NEVER_STREAM : rotateIn(decoded.stream!, BASE32, 1);
      return [`${stream}_${sequence}`, `${GO_NEVER_STREAM}_${sequence}`];
    }
    case rmcpCodec:
      // A request that never existed, at the cursor's index.
      return [`${sequence}/${Number(decoded.stream || 0) + FAR_AHEAD}`];
    case csharpCodec: {
      // The cursor's own session (a foreign one is refused for that alone), a stream it never had.
      const session = decoded.stream!.slice(0, decoded.stream!.indexOf(':'));
      return [`${session}:${CSHARP_NEVER_STREAM}:${sequence}`];
    }
    default:
      return [];
  }
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function rotateIn(text: string, alphabet: string, shift: number): string {
  let out = '';
  for (const ch of text) {
    const i = alphabet.indexOf(ch);
    out += i < 0 ? ch : alphabet[(i + shift) % alphabet.length];
  }
  return out;
}

function rotate(id: string, shift: number): string {
  let out = '';
  for (const ch of id) out += rotateChar(ch, shift);
  return out;
}

function rotateChar(ch: string, shift: number): string {
  const c = ch.charCodeAt(0);
  if (c >= 48 && c <= 57) return String.fromCharCode(48 + ((c - 48 + shift) % 10));
  // Letters a-f stay hex (a uuid stays a uuid), g-z stay non-hex.
  if (c >= 97 && c <= 102) return String.fromCharCode(97 + ((c - 97 + shift) % 6));
  if (c >= 65 && c <= 70) return String.fromCharCode(65 + ((c - 65 + shift) % 6));
  if (c >= 103 && c <= 122) return String.fromCharCode(103 + ((c - 103 + shift) % 20));
  if (c >= 71 && c <= 90) return String.fromCharCode(71 + ((c - 71 + shift) % 20));
  return ch;
}
