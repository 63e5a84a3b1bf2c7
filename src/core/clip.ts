/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What forkwatch keeps of a value the peer chose (a header, an id, a negotiated version) when it puts it on a span
 * or in a diagnostic: a printable prefix of at most a fixed length per kind, whatever the peer sent. Metric labels
 * never carry such values: their values are the fixed sets of shared/names.ts.
 */

/** UTF-16 units kept of each kind of peer value; a clipped value gets at most 20 more for its `…(N chars)` tail. */
export const PEER_VALUE_MAX_CHARS = Object.freeze({
  /** Mcp-Protocol-Version (and the version a client negotiated): a date, `YYYY-MM-DD`. */
  protocolVersion: 32,
  /** A raw session id (captureRawSessionId): the MCP spec's are short visible ASCII. */
  sessionId: 256,
  /** An event id (Last-Event-ID, a frame's `id:`, a stream id). */
  eventId: 256,
});

/**
 * `value` printable and bounded: control characters (C0, DEL and C1, which would corrupt log lines and span
 * viewers) become U+FFFD, and past `maxChars` it is cut (never inside a surrogate pair: a lone surrogate is not
 * valid UTF-8 on export) and ends with its full length.
 */
export function clip(value: string, maxChars: number): string {
  const cut =
    value.length <= maxChars ? value.length : isHighSurrogate(value.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  const printable = value.slice(0, cut).replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD');
  return cut === value.length ? printable : `${printable}…(${value.length} chars)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
