/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A cursor that never existed but looks like a real one, so that a server which only checks the format is caught
 * accepting it: every character keeps its class (hex digits stay hex digits, other letters stay letters, case is
 * kept), separators stay where they are.
 */
import { detectCodec, integerCodec } from '../../core/codecs';

/** When the server gave no id to imitate. */
export const SHAPELESS_BOGUS_CURSOR = 'forkwatch-probe-0000-never-issued';

export function bogusCursor(realCursor: string | undefined, seen: ReadonlySet<string> = new Set()): string {
  if (realCursor === undefined || realCursor === '') return SHAPELESS_BOGUS_CURSOR;
  // A dense integer sequence: a value far ahead of anything the server has issued, still an integer id.
  if (detectCodec(realCursor) === integerCodec) return String(Number(realCursor) + 1e12);
  for (let shift = 1; shift < 16; shift++) {
    const candidate = rotate(realCursor, shift);
    if (candidate !== realCursor && !seen.has(candidate)) return candidate;
  }
  return `${realCursor}0`;
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
