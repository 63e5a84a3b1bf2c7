/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Marks the requests a patched SDK transport sends itself, so the wire-level fetch observer leaves them alone and
 * nothing is judged twice:
 * - a session GET, by session id and cursor, held from the patched `_startOrAuthSse` call until its promise settles
 *   (the SDK's fetch runs in between, after an await);
 * - a protocol 2026-07-28 POST sent through a transport's own fetch (its `fetch` option), by its body (its JSON-RPC
 *   id makes it unique), while that fetch runs: an app's fetch that calls the global one is observed once;
 * - a session GET or a POST the fetch wrapper observes (Node 22), while its fetch runs: undici's channels, subscribed
 *   on every line for the `undici` package's fetch, see the same request when it goes through an undici 7.11+
 *   dispatcher, and leave it to the wrapper.
 *
 * Not an AsyncLocalStorage: on Node 20 the first `run` of one turns on a promise hook for every promise of the
 * process, for good, and SSE streams are made of promises (it was most of the client's cost in the outside-in bench).
 * Two clients of one process sending the same session GET (or the same request) at the same moment would both be
 * left to the patch; only a patched transport can hold such a claim.
 */

const claims = new Map<string, number>();

/** Holds `key` until the returned release is called (once; later calls do nothing). */
function claim(key: string): () => void {
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

const isClaimed = (key: string) => claims.size > 0 && claims.has(key);
const getKey = (sessionId: string | undefined, cursor: string | undefined) =>
  `get\n${sessionId ?? ''}\n${cursor ?? ''}`;
const wrappedGetKey = (sessionId: string, cursor: string | undefined) => `wrapped-get\n${sessionId}\n${cursor ?? ''}`;
const postKey = (body: string) => `post\n${body}`;
const wrappedPostKey = (body: string) => `wrapped-post\n${body}`;

/** Claims the GET a patched transport is about to send; returns the release, to call once it settled. */
export function claimPatchedGet(sessionId: string | undefined, cursor: string | undefined): () => void {
  return claim(getKey(sessionId, cursor));
}

/** True when a patched transport holds a claim on this session GET. */
export function isPatchedTransportGet(sessionId: string, cursor: string | undefined): boolean {
  return isClaimed(getKey(sessionId, cursor));
}

/** Claims the session GET the fetch wrapper observes; returns the release, to call once its fetch settled. */
export function claimWrappedGet(sessionId: string, cursor: string | undefined): () => void {
  return claim(wrappedGetKey(sessionId, cursor));
}

/** True when a patched transport or the fetch wrapper observes this session GET: undici's channels leave it alone. */
export function isObservedGet(sessionId: string, cursor: string | undefined): boolean {
  return isClaimed(getKey(sessionId, cursor)) || isClaimed(wrappedGetKey(sessionId, cursor));
}

/** Claims a POST a transport's own fetch (or the fetch wrapper) observes; returns the release, to call once it settled. */
export function claimOwnFetchPost(body: string): () => void {
  return claim(postKey(body));
}

/** True when this POST is already observed through a transport's own fetch. */
export function isOwnFetchPost(body: string): boolean {
  return isClaimed(postKey(body));
}

/** Claims held now (tests: none may leak). */
/**
 * A protocol 2026-07-28 POST the fetch wrapper observes (Node 22), claimed while its fetch runs so that undici's
 * channels leave it alone. Apart from a transport's own-fetch claim: the wrapper skips only those, never a
 * concurrent POST of the same body (clients that send identical requests at once).
 */
export function claimWrappedPost(body: string): () => void {
  return claim(wrappedPostKey(body));
}

/** True for a POST that some fetch forkwatch wraps observes already (its own or a transport's). */
export function isObservedPost(body: string): boolean {
  return isClaimed(postKey(body)) || isClaimed(wrappedPostKey(body));
}

export function heldClaims(): number {
  return claims.size;
}
