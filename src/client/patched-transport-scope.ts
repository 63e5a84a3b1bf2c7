/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Marks the session GETs that a patched SDK transport sends, so the wire-level fetch observer leaves them to the
 * patch and no resume is judged twice.
 *
 * A claim is the GET's session id and cursor, held from the patched `_startOrAuthSse` call until its promise settles
 * (the SDK's fetch runs in between, after an await). Not an AsyncLocalStorage: on Node 20 the first `run` of one
 * turns on a promise hook for every promise of the process, forever, and SSE streams are made of promises (it was
 * most of the client's cost in the outside-in bench). Two clients of one process resuming the same session from the
 * same cursor at the same moment would both be left to the patch; only a patched transport can hold such a claim.
 */

const claims = new Map<string, number>();

const claimKey = (sessionId: string | undefined, cursor: string | undefined) => `${sessionId ?? ''}\n${cursor ?? ''}`;

/** Claims the GET a patched transport is about to send; returns the release, to call once once it settled. */
export function claimPatchedGet(sessionId: string | undefined, cursor: string | undefined): () => void {
  const key = claimKey(sessionId, cursor);
  claims.set(key, (claims.get(key) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (claims.get(key) ?? 1) - 1;
    if (left > 0) claims.set(key, left);
    else claims.delete(key);
  };
}

/** True when a patched transport holds a claim on this session GET. */
export function isPatchedTransportGet(sessionId: string, cursor: string | undefined): boolean {
  return claims.size > 0 && claims.has(claimKey(sessionId, cursor));
}

/** Claims held now (tests: none may leak). */
export function heldClaims(): number {
  return claims.size;
}
