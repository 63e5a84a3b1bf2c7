/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What makes a request a session's SSE stream, read from its method and headers only: a GET with
 * `Accept: text/event-stream` and `Mcp-Session-Id`; with `Last-Event-ID` it is a resume. Both wire paths read it on
 * every request they see (fetch-wrapper.ts from fetch's arguments, undici-channels.ts from undici's request), so it
 * loads nothing else.
 */
import { headerReader } from '../../shared/fetch-request';
import type { RequestInitLike } from '../../shared/internal-types';

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

/**
 * Reads a fetch call's method and headers, for the MCP session streams only; undefined for everything else. Never
 * reads a body and never throws.
 */
export function sseGetOf(input: unknown, init: RequestInitLike | undefined): SseGet | undefined {
  try {
    const request =
      typeof input === 'object' && input !== null && !(input instanceof URL) ? (input as RequestInitLike) : undefined;
    const method = String(init?.method ?? request?.method ?? 'GET');
    return sessionGetOf(method, headerReader(init?.headers ?? request?.headers));
  } catch {
    return undefined;
  }
}
