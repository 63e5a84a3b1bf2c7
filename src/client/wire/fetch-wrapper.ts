/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire observer's path on Node 22 (index.ts decides): a wrapper of `globalThis.fetch` that judges the streamable
 * HTTP resumes of MCP clients forkwatch has no class patch for. @ai-sdk/mcp is the reason: its HttpMCPTransport is
 * bundled into an ESM-only file and not exported, so no module hook can reach the class, but every request it sends
 * goes through fetch. Node 22's undici publishes no body chunks on its channels, so there the wrapper reads the
 * Response instead.
 *
 * What the wire carries is enough (session-get-request.ts). The response body's frames are observed exactly as a
 * patched SDK transport's are (observed-stream.ts), through a lazy own `body` getter on the very Response the caller
 * gets, so no frame, header or status changes and a body the caller never reads is never read.
 *
 * This file is the wrapper, on every fetch of the process: it reads method and headers only, and loads what observes
 * an MCP exchange (fetch-session-get.ts, per-request-exchange.ts) on the first one, so a process that never fetches
 * from an MCP server never loads them.
 *
 * Session GETs a patched SDK transport sends are claimed by it (patched-transport-scope.ts) and left to the patch;
 * the requests the wrapper observes are claimed while their fetch runs, so the channels leave them alone. What the
 * wire cannot show, and the class patch can: a reconnect that dropped the cursor (`cursor_dropped` needs the
 * client's intent) and the client's onerror (fail-loud mode errors the stream instead).
 */
import { perRequestVersionOf } from '../../shared/fetch-request';
import { observedPromise } from '../../shared/observed-promise';
import type { FetchLike, RequestInitLike } from '../../shared/internal-types';
import type { ForkwatchRuntime } from '../../shared/runtime';
import { protocolHasResumability } from '../../shared/session-id';
import {
  claimOwnFetchPost,
  claimWrappedGet,
  claimWrappedPost,
  isOwnFetchPost,
  isPatchedTransportGet,
} from '../observer/patched-transport-scope';
import { sessionEnded, sseDeleteOf, sseGetOf } from './session-get-request';
import { observesThroughChannels } from './undici-version';

/** A fetch, and forkwatch's mark on the one it installed. */
type Fetch = FetchLike & { readonly [FETCH_MARK]?: true };

const FETCH_MARK = Symbol.for('forkwatch.fetch-observer');

/** Wraps `globalThis.fetch`; returns the function that takes the wrapper off again. */
export function installFetchWrapper(runtime: ForkwatchRuntime): () => void {
  const original = globalThis.fetch as unknown as Fetch | undefined;
  if (typeof original !== 'function' || original[FETCH_MARK]) return () => {};
  const observed = function fetch(this: unknown, input: unknown, init?: RequestInitLike) {
    if (!runtime.enabled) return original.call(this, input, init);
    // Already observed through a transport's own fetch, which called this one.
    if (perRequestVersionOf(init) !== undefined && !isOwnFetchPost((init as { body: string }).body)) {
      const exchange = clientExchange();
      const post = exchange.perRequestPostOf(input, init);
      if (post) {
        return whileClaimed(claimWrappedPost((init as { body: string }).body), () =>
          exchange.observePerRequestPost(original, this, input, init, post, runtime),
        );
      }
    }
    const get = sseGetOf(input, init);
    if (!get) {
      const ended = sseDeleteOf(input, init);
      if (ended === undefined) return original.call(this, input, init);
      return observedPromise(
        original.call(this, input, init),
        response => sessionEnded(runtime, ended, statusOf(response)),
        () => {},
        error => runtime.diag.error('observing a session DELETE', error),
      );
    }
    if (!protocolHasResumability(get.protocolVersion) || isPatchedTransportGet(get.sessionId, get.cursor)) {
      return original.call(this, input, init);
    }
    return whileClaimed(claimWrappedGet(get.sessionId, get.cursor), () =>
      sessionGetObserver().observeSessionGet(original, this, input, init, get, runtime),
    );
  };
  Object.defineProperty(observed, FETCH_MARK, { value: true });
  globalThis.fetch = observed as unknown as typeof globalThis.fetch;
  return () => {
    // Someone wrapped fetch after forkwatch: leave their wrapper in place; ours passes through once disabled.
    if (globalThis.fetch === (observed as unknown)) globalThis.fetch = original as unknown as typeof globalThis.fetch;
  };
}

/** Runs `send` (a fetch) and releases the claim once its promise settled, or at once if it throws. */
function whileClaimed(release: () => void, send: () => unknown): unknown {
  let result: unknown;
  try {
    result = send();
  } catch (error) {
    release();
    throw error;
  }
  // The host's fetch promise is not observed directly: a reaction on it would mark its rejection handled.
  return observedPromise(result, release, release, () => {});
}

/**
 * A transport's own fetch (its `fetch` option, which never reaches `globalThis.fetch` unless it calls it): its
 * protocol 2026-07-28 POSTs are observed as the global observer observes them, everything else passes through.
 */
export function observeOwnFetch(own: Fetch, runtime: ForkwatchRuntime): Fetch {
  // The undici channels see every fetch that goes through undici, a transport's own included.
  if (own[FETCH_MARK] || observesThroughChannels) return own;
  const observed = function fetch(this: unknown, input: unknown, init?: RequestInitLike) {
    if (!runtime.enabled || perRequestVersionOf(init) === undefined) return own.call(this, input, init);
    const exchange = clientExchange();
    const post = exchange.perRequestPostOf(input, init);
    if (!post) return own.call(this, input, init);
    return whileClaimed(claimOwnFetchPost((init as { body: string }).body), () =>
      exchange.observePerRequestPost(own, this, input, init, post, runtime),
    );
  };
  Object.defineProperty(observed, FETCH_MARK, { value: true });
  return observed as unknown as Fetch;
}

// Loaded on the first MCP exchange the process fetches (see the file comment).
const clientExchange = () => require('./per-request-exchange') as typeof import('./per-request-exchange');
const sessionGetObserver = () => require('./fetch-session-get') as typeof import('./fetch-session-get');

/** A fetch Response's status, if it has a numeric one. */
function statusOf(response: unknown): number | undefined {
  const status = (response as { status?: unknown } | null | undefined)?.status;
  return typeof status === 'number' ? status : undefined;
}
