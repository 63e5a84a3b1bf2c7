/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reads a fetch call's method and headers without touching its body: what the wire-level observers need to tell an
 * MCP request from all the others, cheaply enough to run on every fetch of the process.
 */
import type { HeadersInitLike, RequestInitLike } from './internal-types';
import { protocolHasResumability } from './session-id';

/** A reader of one header by lower-case name: undefined when absent or empty. */
export function headerReader(headers: HeadersInitLike | undefined): (name: string) => string | undefined {
  if (!headers) return () => undefined;
  if (typeof headers.get === 'function') return name => headers.get!(name) ?? undefined;
  const entries: [string, unknown][] = Array.isArray(headers) ? headers : Object.entries(headers);
  return name => {
    for (const [key, value] of entries) {
      if (typeof key !== 'string' || key.toLowerCase() !== name) continue;
      if (value !== undefined && value !== '') return String(value);
    }
    return undefined;
  };
}

/**
 * The protocol version of a POST that protocol 2026-07-28 or later carries (no sessions, no resumability) with a
 * string body forkwatch can read; undefined for every other call. Never throws.
 */
export function perRequestVersionOf(init: RequestInitLike | undefined): string | undefined {
  try {
    const body = (init as { body?: unknown } | undefined)?.body;
    if (typeof body !== 'string' || String(init?.method ?? '').toUpperCase() !== 'POST') return undefined;
    const version = headerReader(init?.headers)('mcp-protocol-version');
    return version === undefined || protocolHasResumability(version) ? undefined : version;
  } catch {
    return undefined;
  }
}
