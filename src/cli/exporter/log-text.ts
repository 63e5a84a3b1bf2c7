/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What the exporter writes about a request: whoever reaches it chooses the request, so a value from it is quoted
 * and escaped (a CR/LF in `target=` would otherwise write a line of its own, a forged probe result), and a URL is
 * shown without what may be a secret (credentials, query, fragment).
 */

/** A control character, or a line or paragraph separator, that would break a log line. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** The line with every control character escaped: one log call, one line. */
export function oneLine(line: string): string {
  return line.replace(UNPRINTABLE, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A value from a request, quoted and escaped, at most `max` characters of it. */
export function quoted(value: string, max = 200): string {
  const clipped = value.length > max ? `${value.slice(0, max)}…` : value;
  return oneLine(JSON.stringify(clipped));
}

/**
 * A URL-ish text as it may be shown: credentials before an `@` in the authority and anything from the query or
 * fragment on are replaced, whether or not the text parses as a URL.
 */
export function withoutSecrets(text: string): string {
  const authority = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(text);
  let shown = text;
  if (authority) {
    const [, scheme, host] = authority;
    const at = host!.lastIndexOf('@');
    if (at !== -1) shown = `${scheme}<credentials>@${host!.slice(at + 1)}${text.slice(authority[0].length)}`;
  } else if (text.includes('@')) {
    return '<left out: it holds an "@", maybe credentials>';
  }
  const cut = shown.search(/[?#]/);
  return cut === -1 ? shown : `${shown.slice(0, cut)}${shown[cut]}<left out>`;
}
