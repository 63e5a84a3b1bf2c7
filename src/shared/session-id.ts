/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { PEER_VALUE_MAX_CHARS, clip } from '../core/clip';
import { ATTR } from './names';

/**
 * node:crypto's, required on the first hash rather than at start-up: every process that loads register would load it
 * before the app's first line, and most never hash a session id (issue 50).
 */
let createHash: typeof import('node:crypto').createHash | undefined;

/**
 * Session ids are bearer-like secrets on some servers, so spans carry a short hash by default. Client and server
 * hash the same way, which keeps their spans joinable.
 */
export function hashSessionId(sessionId: string): string {
  createHash ??= (require('node:crypto') as typeof import('node:crypto')).createHash;
  return createHash('sha256').update(sessionId).digest('hex').slice(0, 16);
}

/** The session attributes of a span: always the hash, the raw id (clipped) only when the user opted in. */
export function sessionSpanAttributes(sessionId: string | undefined, captureRaw: boolean): Record<string, string> {
  if (sessionId === undefined) return {};
  return {
    [ATTR.sessionHash]: hashSessionId(sessionId),
    ...(captureRaw ? { [ATTR.mcpSessionId]: clipSessionId(sessionId) } : {}),
  };
}

/** A raw session id as a span shows it: the peer chose it, so at most PEER_VALUE_MAX_CHARS.sessionId of it. */
export function clipSessionId(sessionId: string): string {
  return clip(sessionId, PEER_VALUE_MAX_CHARS.sessionId);
}

/** The `mcp.protocol.version` attribute of a span, clipped: the peer chose the header (or negotiated the version). */
export function protocolVersionAttributes(version: string | undefined): Record<string, string> {
  return version ? { [ATTR.mcpProtocolVersion]: clip(version, PEER_VALUE_MAX_CHARS.protocolVersion) } : {};
}

/** Protocol revisions from 2026-07-28 have no resumability: forkwatch stays silent for them. */
export function protocolHasResumability(version: string | undefined): boolean {
  return version === undefined || version === '' || version < '2026-07-28';
}
