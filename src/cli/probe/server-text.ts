/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Text the server chose (error messages, headers, bodies, ids) as the probe may print it: escaped, so that it can
 * neither start a line of its own (a forged `verdict: RESUMABLE (exit 0)`) nor drive a terminal (ESC sequences,
 * bidirectional overrides), and clipped. `quoted` is for text inside a sentence; `escaped` for a field that holds
 * one server value (an id in the JSON report). `safeReport` is the last line of defence: every string of a report
 * goes through `escaped` before either output is written, whatever path it took into the report.
 */

/**
 * C0 and C1 controls and DEL; line and paragraph separators; the bidirectional marks, embeddings, overrides and
 * isolates that make a terminal show text in another order than it is.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** What the report keeps of one server value at most (an error message, an id, a header). */
export const SERVER_TEXT_MAX_CHARS = 200;
/** Any string of a report, the probe's own sentences around server text included. */
const REPORT_STRING_MAX_CHARS = 4000;

/** `text` without a character that could break a line or drive a terminal: each becomes `\uXXXX`, visibly. */
export function escaped(text: string, max = SERVER_TEXT_MAX_CHARS): string {
  return clip(text, max).replace(UNSAFE, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Server text inside the probe's own sentence: in double quotes, escaped as JSON escapes it, then as above. */
export function quoted(text: string, max = SERVER_TEXT_MAX_CHARS): string {
  return escaped(JSON.stringify(clip(text, max)), Number.POSITIVE_INFINITY);
}

/** At most `max` characters, never cutting a surrogate pair, with the full length said. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = isHighSurrogate(text.charCodeAt(max - 1)) ? max - 1 : max;
  return `${text.slice(0, cut)}…(${text.length} chars)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A copy of `value` with every string (object keys included) escaped and clipped. */
export function safeReport<T>(value: T): T {
  return walk(value) as T;
}

function walk(value: unknown): unknown {
  if (typeof value === 'string') return escaped(value, REPORT_STRING_MAX_CHARS);
  if (Array.isArray(value)) return value.map(walk);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[escaped(key, REPORT_STRING_MAX_CHARS)] = walk(inner);
  return out;
}

/**
 * Whether a client can send `id` back as `Last-Event-ID`: fetch (undici, the SDK's client) refuses a header value
 * with a control character other than tab, or a character beyond Latin-1.
 */
export function isSendableId(id: string): boolean {
  return /^[\t\x20-\x7e\x80-\xff]*$/.test(id);
}
