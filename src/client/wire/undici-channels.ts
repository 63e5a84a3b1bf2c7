/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire observer on undici's diagnostics channels, on every Node line: it reads the MCP exchanges off undici's
 * channels, as @opentelemetry/instrumentation-undici does, and never touches `fetch` nor a Response. It sees every
 * request undici dispatches, whichever undici: the runtime's (global fetch) and the `undici` npm package's own fetch
 * and request(), which some MCP clients use instead of the global fetch (mcp-remote). The requests the fetch wrapper
 * observes (Node 22: fetch-wrapper.ts) or a patched SDK transport sends are claimed (patched-transport-scope.ts)
 * and left to them. index.ts installs it.
 *
 * Which undici publishes a request is its dispatcher's, not its fetch's: every copy shares one global dispatcher,
 * made by whichever loaded first (on Node 22 the package's fetch runs on the runtime's undici 6 when the global fetch
 * was called first). undici 7.11 and later publish each response body chunk; an earlier one does not, and its
 * request's `onData` (the method its client hands each chunk to) is shadowed on that one request object instead,
 * until its prototype is seen publishing: bodyChunksOf().
 *
 * Per request: `create` (method and headers: a session GET or a protocol 2026-07-28 POST, else ignored), the POST's
 * body chunks (`bodyChunkSent`, up to MAX_POST_BODY_BYTES) parsed once sent (`bodySent`), `headers` (status and
 * content type), each `bodyChunkReceived`, then `trailers` (the body's end) or `error`. Only `create`, `headers` (a
 * session DELETE's answer) and `error` are subscribed for good; the body and end channels only while an MCP exchange
 * is watched: other requests of the process, and those a patched transport observes itself, pay for nothing else.
 *
 * Fail-loud mode cuts a forked stream with undici's own abort of the request, from inside the chunk's publish, before
 * undici hands the chunk on: the app's read fails with `TypeError: terminated` whose cause is StreamForkDetected (the
 * fetch wrapper errors the body with StreamForkDetected itself). What the channel cannot do that the wrapper does:
 * enter the resume's context for an HTTP instrumentation's span, read a compressed body (Content-Encoding: such a
 * stream is not observed), see a transport's own fetch that does not go through undici, and see a redirected resume
 * as one (each hop is a request: the redirect's is rejected, the next one judged).
 */
import * as diagnosticsChannel from 'node:diagnostics_channel';
import { protocolHasResumability } from '../../shared/session-id';
import type { ForkwatchRuntime } from '../../shared/runtime';
import { isObservedGet } from '../observer/patched-transport-scope';
import { sessionDeleteOf, sessionEnded, sessionGetOf } from './session-get-request';
import {
  type UndiciRequest,
  type UndiciResponse,
  cutOf,
  headerReaderOf,
  isAbort,
  tapBodyChunks,
} from './undici-request';

/** A request body longer than this is not parsed: that exchange is not observed. */
const MAX_POST_BODY_BYTES = 1 << 20;

/** One watched exchange, from `create` to its end. */
interface Watch {
  /** The response body's chunks go here once the headers opened a stream worth watching. */
  push?(chunk: Uint8Array): void;
  /** The request got its response headers. False: nothing more to watch. */
  responded(status: number | undefined, header: (name: string) => string | undefined): boolean;
  /** The request body's chunks (a POST's), until it is sent. */
  sent?(chunk: Uint8Array | string): void;
  bodySent?(): void;
  /** The body ended (`error` undefined) or the request failed (`aborted`: by the app or its signal). */
  ended(error: unknown, aborted: boolean): void;
}

/** A watch and how its body chunks reach it. */
interface Watched {
  watch: Watch;
  /** The chunk the tap of `onData` is handing over now: its publish on the channel (if any) is the same chunk. */
  tapping?: unknown;
  /** Takes the tap off the request, if one was put on. */
  untap?: () => void;
  /** Whether a chunk of the request body was published (undici 6 publishes none). */
  bodyPublished?: true;
}

const CHANNELS = {
  create: 'undici:request:create',
  bodyChunkSent: 'undici:request:bodyChunkSent',
  bodySent: 'undici:request:bodySent',
  headers: 'undici:request:headers',
  bodyChunkReceived: 'undici:request:bodyChunkReceived',
  trailers: 'undici:request:trailers',
  error: 'undici:request:error',
} as const;

/**
 * Set on globalThis while an observer is subscribed, by any copy of forkwatch in the process: a second instance (an
 * app's own beside `forkwatch/register`'s) leaves the channels to the first, as the fetch wrapper leaves a marked fetch.
 */
const INSTALLED = Symbol.for('forkwatch.undici-channel-observer');

/** Subscribes to undici's request channels; returns the function that unsubscribes every one. */
export function installUndiciChannelObserver(runtime: ForkwatchRuntime): () => void {
  const global = globalThis as { [INSTALLED]?: true };
  if (global[INSTALLED]) return () => {};
  global[INSTALLED] = true;
  const observer = new ChannelObserver(runtime);
  observer.subscribe();
  return () => {
    observer.unsubscribe();
    delete global[INSTALLED];
  };
}

/** The subscriber of every channel: one handler per channel, each a few lines, and the watches they feed. */
class ChannelObserver {
  private readonly watches = new WeakMap<object, Watched>();
  /** Session DELETEs in flight, by request: their answer may end the session (session-get-request.ts). */
  private readonly deletes = new WeakMap<object, string>();
  /** The prototypes of undici's requests seen publishing body chunks: their requests need no tap. */
  private readonly publishing = new WeakSet<object>();
  /**
   * The prototypes seen sending a POST body without publishing it (undici 6): their POSTs cannot be judged here, and
   * are not watched (on Node 22 the fetch wrapper observes the global fetch's).
   */
  private readonly silentBodies = new WeakSet<object>();
  private watching = 0;
  private watchChannelsSubscribed = false;
  /** Cleared on uninstall: a tap still on a request in flight then hands nothing on. */
  private subscribed = true;

  constructor(private readonly runtime: ForkwatchRuntime) {}

  /** The channels subscribed for good: every request's start, a session DELETE's answer, and failures. */
  private readonly always: [string, (message: unknown) => void][] = [
    [CHANNELS.create, this.guard('request', m => this.created(m as { request: UndiciRequest }))],
    [
      CHANNELS.headers,
      this.guard('response headers', m => this.headers(m as { request: object; response: UndiciResponse })),
    ],
    [CHANNELS.error, this.guard('request error', m => this.failed(m as { request: object; error: unknown }))],
  ];
  /**
   * The channels subscribed only while an exchange is watched (issue 50: each subscribed channel costs every request
   * of the process a message and a call, four of five in a short MCP session on a patched transport).
   */
  private readonly whileWatching: [string, (message: unknown) => void][] = [
    [CHANNELS.bodySent, this.guard('request body', m => this.bodySent(m as { request: object }))],
    [CHANNELS.trailers, this.guard('response end', m => this.trailers(m as { request: object }))],
    [
      CHANNELS.bodyChunkSent,
      this.guard('request body', m => this.chunkSent(m as { request: object; chunk: Uint8Array | string })),
    ],
    [
      CHANNELS.bodyChunkReceived,
      this.guard('response body', m => this.chunkReceived(m as { request: object; chunk: Uint8Array })),
    ],
  ];
  private readonly onChunkTapped = this.guard('response body', m => {
    const { watched, chunk } = m as { watched: Watched; chunk: Uint8Array };
    watched.watch.push?.(chunk);
  });

  subscribe(): void {
    for (const [name, fn] of this.always) diagnosticsChannel.subscribe(name, fn);
  }

  unsubscribe(): void {
    this.subscribed = false;
    for (const [name, fn] of this.always) diagnosticsChannel.unsubscribe(name, fn);
    this.watchChannels(false);
  }

  /** A subscriber's throw would reach the process as an uncaught exception: never let one out. */
  private guard(what: string, fn: (message: unknown) => void): (message: unknown) => void {
    return message => {
      try {
        fn(message);
      } catch (error) {
        this.runtime.diag.error(`observing undici's ${what} failed; this exchange is not checked`, error);
      }
    };
  }

  private created({ request }: { request: UndiciRequest }): void {
    const { runtime } = this;
    if (!runtime.enabled || typeof request?.method !== 'string') return;
    if (request.method.length === 6 && request.method.toUpperCase() === 'DELETE') {
      // Not a watch: a DELETE's answer has no body to read, and a watch would open the chunk channels for it.
      const sessionId = sessionDeleteOf(request.method, headerReaderOf(request.headers));
      if (sessionId !== undefined) this.deletes.set(request, sessionId);
      return;
    }
    if (this.silentBodies.has(Object.getPrototypeOf(request)) && request.method.toUpperCase() === 'POST') return;
    const watch = watchOf(request, runtime);
    if (!watch) return;
    const watched: Watched = { watch };
    if (!this.publishing.has(Object.getPrototypeOf(request))) {
      watched.untap = tapBodyChunks(request, chunk => {
        if (!this.subscribed || this.watches.get(request) !== watched) return;
        watched.tapping = chunk;
        this.onChunkTapped({ watched, chunk });
      });
    }
    this.watches.set(request, watched);
    this.watching++;
    this.watchChannels(true);
  }

  private chunkSent(m: { request: object; chunk: Uint8Array | string }): void {
    const watched = this.watches.get(m.request);
    if (!watched) return;
    watched.bodyPublished = true;
    watched.watch.sent?.(m.chunk);
  }

  private bodySent(m: { request: object }): void {
    const watched = this.watches.get(m.request);
    if (!watched?.watch.bodySent) return;
    if (!watched.bodyPublished) this.silentBodies.add(Object.getPrototypeOf(m.request));
    watched.watch.bodySent();
  }

  private headers(m: { request: object; response: UndiciResponse }): void {
    const status = typeof m.response?.statusCode === 'number' ? m.response.statusCode : undefined;
    const watch = this.watches.get(m.request)?.watch;
    if (!watch) {
      const ended = this.deletes.get(m.request);
      if (ended === undefined) return;
      this.deletes.delete(m.request);
      sessionEnded(this.runtime, ended, status);
      return;
    }
    // A response that opens no stream to watch (an error, JSON, a redirect: its next hop is a request of its own).
    if (!watch.responded(status, headerReaderOf(m.response?.headers))) this.stop(m.request);
  }

  private chunkReceived(m: { request: object; chunk: Uint8Array }): void {
    const watched = this.watches.get(m.request);
    if (!watched) return;
    this.publishing.add(Object.getPrototypeOf(m.request));
    if (watched.tapping === m.chunk) watched.tapping = undefined;
    else watched.watch.push?.(m.chunk);
  }

  private trailers(m: { request: object }): void {
    this.watches.get(m.request)?.watch.ended(undefined, false);
    this.stop(m.request);
  }

  private failed(m: { request: object; error: unknown }): void {
    this.watches.get(m.request)?.watch.ended(m.error ?? new Error('request failed'), isAbort(m.error));
    this.stop(m.request);
  }

  private watchChannels(on: boolean): void {
    if (on === this.watchChannelsSubscribed) return;
    this.watchChannelsSubscribed = on;
    const change = on ? diagnosticsChannel.subscribe : diagnosticsChannel.unsubscribe;
    for (const [name, fn] of this.whileWatching) change(name, fn);
  }

  private stop(request: object): void {
    const watched = this.watches.get(request);
    if (!watched) return;
    this.watches.delete(request);
    watched.untap?.();
    this.watching--;
    if (this.watching === 0) this.watchChannels(false);
  }
}

/** The watch for a request that is an MCP session GET or a protocol 2026-07-28 POST; undefined for anything else. */
function watchOf(request: UndiciRequest, runtime: ForkwatchRuntime): Watch | undefined {
  const method = (request.method as string).toUpperCase();
  if (method !== 'GET' && method !== 'POST') return undefined;
  const header = headerReaderOf(request.headers);
  if (method === 'GET') {
    const get = sessionGetOf(method, header);
    if (!get || !protocolHasResumability(get.protocolVersion) || isObservedGet(get.sessionId, get.cursor)) {
      return undefined;
    }
    return channelWatches().sessionGetWatch(get, runtime, cutOf(request));
  }
  const version = header('mcp-protocol-version');
  if (version === undefined || protocolHasResumability(version)) return undefined;
  const endpoint = `${String(request.origin ?? '')}${String(request.path ?? '')}`;
  return channelWatches().perRequestPostWatch(endpoint, header, runtime, MAX_POST_BODY_BYTES);
}

// Loaded on the first MCP exchange undici publishes (as the fetch wrapper loads its work: fetch-wrapper.ts).
const channelWatches = () => require('./channel-watches') as typeof import('./channel-watches');
