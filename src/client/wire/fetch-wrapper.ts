/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Wire-level client observer: a wrapper of `globalThis.fetch` that judges the streamable HTTP resumes of MCP clients
 * forkwatch has no class patch for. @ai-sdk/mcp is the reason: its HttpMCPTransport is bundled into an ESM-only
 * file and not exported, so no module hook can reach the class, but every request it sends goes through fetch.
 *
 * What the wire carries is enough: a GET with `Accept: text/event-stream` and `Mcp-Session-Id` is a session's SSE
 * stream; with `Last-Event-ID` it is a resume. The response body's frames are observed exactly as a patched SDK
 * transport's are (observed-stream.ts), through a lazy own `body` getter on the very Response the caller gets, so
 * no frame, header or status changes and a body the caller never reads is never read.
 *
 * This file is the wrapper, on every fetch of the process: it reads method and headers only, and loads what observes
 * an MCP exchange (session-get-observer.ts, per-request-exchange.ts) on the first one, so a process that never
 * fetches from an MCP server never loads them.
 *
 * Session GETs a patched SDK transport sends are claimed by it (patched-transport-scope.ts) and left to the patch.
 * What the wire cannot show, and the class patch can: a reconnect that dropped the cursor (`cursor_dropped` needs
 * the client's intent) and the client's onerror (fail-loud mode errors the stream instead).
 */
import { headerReader, perRequestVersionOf } from '../shared/fetch-request';
import { observedPromise } from '../shared/observed-promise';
import type { FetchLike, RequestInitLike } from '../shared/internal-types';
import type { ForkwatchRuntime } from '../shared/runtime';
import { protocolHasResumability } from '../shared/session-id';
import {
  claimOwnFetchPost,
  claimWrappedGet,
  claimWrappedPost,
  isOwnFetchPost,
  isPatchedTransportGet,
} from './patched-transport-scope';
import { undiciPublishesBodyChunks } from './undici-version';

/** A fetch, and forkwatch's mark on the one it installed. */
type Fetch = FetchLike & { readonly [FETCH_MARK]?: true };

/** The session stream a GET opens, read from its headers. */
export interface SseGet {
  sessionId: string;
  protocolVersion: string | undefined;
  /** Last-Event-ID: set for a resume. */
  cursor: string | undefined;
}

const FETCH_MARK = Symbol.for('forkwatch.fetch-observer');

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

/** The session stream a request with this method and these headers opens, or undefined. */
export function sessionGetOf(method: string, header: (name: string) => string | undefined): SseGet | undefined {
  if (method.toUpperCase() !== 'GET') return undefined;
  const sessionId = header('mcp-session-id');
  if (!sessionId || !header('accept')?.includes('text/event-stream')) return undefined;
  return { sessionId, protocolVersion: header('mcp-protocol-version'), cursor: header('last-event-id') };
}

/**
 * Where the runtime's undici publishes body chunks (Node 24 and later), forkwatch observes fetch through those
 * channels alone and leaves `fetch` alone (undici-channel-observer.ts). Elsewhere (Node 22) it also wraps
 * `globalThis.fetch`, whose Response it can read. Decided once: the runtime's undici does not change.
 */
const observesThroughChannels = undiciPublishesBodyChunks(process.versions.undici);

/**
 * Installs the wire observer; returns the function that takes it off again (fetch restored, channels unsubscribed).
 * undici's channels are subscribed on every line: the `undici` npm package's fetch (mcp-remote's) never goes
 * through `globalThis.fetch`, and its requests are published there whatever the runtime bundles. The requests the
 * wrapper observes are claimed while their fetch runs, so the channels leave them alone: each is observed once.
 */
export function installFetchObserver(runtime: ForkwatchRuntime): () => void {
  const channels = require('./undici-channel-observer') as typeof import('./undici-channel-observer');
  const unsubscribe = channels.installUndiciChannelObserver(runtime);
  if (observesThroughChannels) return unsubscribe;
  const unwrap = installFetchWrapper(runtime);
  return () => {
    unwrap();
    unsubscribe();
  };
}

/** Wraps `globalThis.fetch`; returns the function that takes the wrapper off again. */
function installFetchWrapper(runtime: ForkwatchRuntime): () => void {
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
    if (!get || !protocolHasResumability(get.protocolVersion) || isPatchedTransportGet(get.sessionId, get.cursor)) {
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
const sessionGetObserver = () => require('./session-get-observer') as typeof import('./session-get-observer');
