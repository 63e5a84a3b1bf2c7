/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What makes a request a session's SSE stream, read from its method and headers only: a GET with
 * `Accept: text/event-stream` and `Mcp-Session-Id`; with `Last-Event-ID` it is a resume. A DELETE with
 * `Mcp-Session-Id` ends the session. Both wire paths read it on every request they see (fetch-wrapper.ts from fetch's
 * arguments, undici-channels.ts from undici's request), so it loads nothing else.
 */
import { headerReader } from '../../shared/fetch-request';
import type { RequestInitLike } from '../../shared/internal-types';
import type { ForkwatchRuntime } from '../../shared/runtime';

/** The session stream a GET opens, read from its headers. */
export interface SseGet {
  sessionId: string;
  protocolVersion: string | undefined;
  /** Last-Event-ID: set for a resume. */
  cursor: string | undefined;
}

/** The session stream a request with this method and these headers opens, or undefined. */
export function sessionGetOf(method: string, header: (name: string) => string | undefined): SseGet | undefined {
  if (method.toUpperCase() !== 'GET') return undefined;
  const sessionId = header('mcp-session-id');
  if (!sessionId || !header('accept')?.includes('text/event-stream')) return undefined;
  return { sessionId, protocolVersion: header('mcp-protocol-version'), cursor: header('last-event-id') };
}

/** The session a request with this method and these headers ends (a DELETE with `Mcp-Session-Id`), or undefined. */
export function sessionDeleteOf(method: string, header: (name: string) => string | undefined): string | undefined {
  return method.toUpperCase() === 'DELETE' ? header('mcp-session-id') || undefined : undefined;
}

/** A fetch call's session DELETE (see sessionDeleteOf); undefined for everything else. Never throws. */
export function sseDeleteOf(input: unknown, init: RequestInitLike | undefined): string | undefined {
  return readFetchCall(input, init, sessionDeleteOf);
}

/**
 * The client ledger keeps a session's record for as long as it may be resumed (30 minutes by default); a session the
 * server confirmed ended (2xx to its DELETE) cannot be, so its record goes at once (issue 50: a short session's
 * record was most of what forkwatch kept of it).
 */
export function sessionEnded(runtime: ForkwatchRuntime, sessionId: string, status: number | undefined): void {
  if (status !== undefined && status >= 200 && status < 300) runtime.clientLedger.forget(sessionId);
}

/**
 * Reads a fetch call's method and headers, for the MCP session streams only; undefined for everything else. Never
 * reads a body and never throws.
 */
export function sseGetOf(input: unknown, init: RequestInitLike | undefined): SseGet | undefined {
  return readFetchCall(input, init, sessionGetOf);
}

/**
 * Hands a fetch call's method and headers (init first, then a Request given as input) to `read`; never throws. The
 * headers are read only if `read` asks, which it does for its own method only: most calls are neither.
 */
function readFetchCall<T>(
  input: unknown,
  init: RequestInitLike | undefined,
  read: (method: string, header: (name: string) => string | undefined) => T | undefined,
): T | undefined {
  try {
    const request =
      typeof input === 'object' && input !== null && !(input instanceof URL) ? (input as RequestInitLike) : undefined;
    const method = String(init?.method ?? request?.method ?? 'GET');
    let header: ((name: string) => string | undefined) | undefined;
    return read(method, name => {
      header ??= headerReader(init?.headers ?? request?.headers);
      return header(name);
    });
  } catch {
    return undefined;
  }
}
