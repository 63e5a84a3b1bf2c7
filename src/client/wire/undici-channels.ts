/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire observer on undici's diagnostics channels, on every Node line: it reads the MCP exchanges off undici's
 * channels, as @opentelemetry/instrumentation-undici does, and never touches `fetch` nor a Response. It sees every
 * request undici dispatches, whichever undici: the runtime's (global fetch) and the `undici` npm package's own fetch
 * and request(), which some MCP clients use instead of the global fetch (mcp-remote). The requests the fetch wrapper
 * observes (Node 22: fetch-observer.ts) or a patched SDK transport sends are claimed (patched-transport-scope.ts)
 * and left to them.
 *
 * Which undici publishes a request is its dispatcher's, not its fetch's: every copy shares one global dispatcher,
 * made by whichever loaded first (on Node 22 the package's fetch runs on the runtime's undici 6 when the global fetch
 * was called first). undici 7.11 and later publish each response body chunk; an earlier one does not, and its
 * request's `onData` (the method its client hands each chunk to) is shadowed on that one request object instead,
 * until its prototype is seen publishing: bodyChunksOf().
 *
 * Per request: `create` (method and headers: a session GET or a protocol 2026-07-28 POST, else ignored), the POST's
 * body chunks (`bodyChunkSent`, up to MAX_POST_BODY_BYTES) parsed once sent (`bodySent`), `headers` (status and
 * content type), each `bodyChunkReceived`, then `trailers` (the body's end) or `error`. The chunk channels are
 * subscribed only while an MCP exchange is watched: other requests of the process pay nothing per chunk.
 *
 * Fail-loud mode cuts a forked stream with undici's own abort of the request, from inside the chunk's publish, before
 * undici hands the chunk on: the app's read fails with `TypeError: terminated` whose cause is StreamForkDetected (the
 * fetch wrapper errors the body with StreamForkDetected itself). What the channel cannot do that the wrapper does:
 * enter the resume's context for an HTTP instrumentation's span, read a compressed body (Content-Encoding: such a
 * stream is not observed), see a transport's own fetch that does not go through undici, and see a redirected resume
 * as one (each hop is a request: the redirect's is rejected, the next one judged).
 */
import * as diagnosticsChannel from 'node:diagnostics_channel';
import { protocolHasResumability } from '../shared/session-id';
import type { ForkwatchRuntime } from '../shared/runtime';
import { sessionGetOf } from './fetch-observer';
import { isObservedGet } from './patched-transport-scope';

/** A request body longer than this is not parsed: that exchange is not observed. */
const MAX_POST_BODY_BYTES = 1 << 20;

/** undici's request as its channels publish it (core/request.js). */
interface UndiciRequest {
  method?: unknown;
  origin?: unknown;
  path?: unknown;
  /** `[name, value, name, value…]`, or `name: value\r\n…` before undici 6. */
  headers?: unknown;
}

interface UndiciResponse {
  statusCode?: unknown;
  /** `[name, value…]` as Buffers (or strings). */
  headers?: unknown;
}

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
  const watches = new WeakMap<object, Watched>();
  // The prototypes of undici's requests seen publishing body chunks: their requests need no tap.
  const publishing = new WeakSet<object>();
  // The prototypes seen sending a POST body without publishing it (undici 6): their POSTs cannot be judged here, and
  // are not watched (on Node 22 the fetch wrapper observes the global fetch's).
  const silentBodies = new WeakSet<object>();
  let watching = 0;
  let chunksSubscribed = false;
  // Cleared on uninstall: a tap still on a request in flight then hands nothing on.
  let subscribed = true;

  const guard =
    <M>(what: string, fn: (message: M) => void) =>
    (message: unknown) => {
      // A subscriber's throw would reach the process as an uncaught exception: never let one out.
      try {
        fn(message as M);
      } catch (error) {
        runtime.diag.error(`observing undici's ${what} failed; this exchange is not checked`, error);
      }
    };

  const onChunkSent = guard<{ request: object; chunk: Uint8Array | string }>('request body', m => {
    const watched = watches.get(m.request);
    if (!watched) return;
    watched.bodyPublished = true;
    watched.watch.sent?.(m.chunk);
  });
  const onChunkReceived = guard<{ request: object; chunk: Uint8Array }>('response body', m => {
    const watched = watches.get(m.request);
    if (!watched) return;
    publishing.add(Object.getPrototypeOf(m.request));
    if (watched.tapping === m.chunk) watched.tapping = undefined;
    else watched.watch.push?.(m.chunk);
  });
  const onChunkTapped = guard<{ watched: Watched; chunk: Uint8Array }>('response body', m =>
    m.watched.watch.push?.(m.chunk),
  );
  const chunkChannels = (on: boolean) => {
    if (on === chunksSubscribed) return;
    chunksSubscribed = on;
    const change = on ? diagnosticsChannel.subscribe : diagnosticsChannel.unsubscribe;
    change(CHANNELS.bodyChunkSent, onChunkSent);
    change(CHANNELS.bodyChunkReceived, onChunkReceived);
  };
  const stop = (request: object) => {
    const watched = watches.get(request);
    if (!watched) return;
    watches.delete(request);
    watched.untap?.();
    watching--;
    if (watching === 0) chunkChannels(false);
  };

  const onCreate = guard<{ request: UndiciRequest }>('request', ({ request }) => {
    if (!runtime.enabled || typeof request?.method !== 'string') return;
    if (silentBodies.has(Object.getPrototypeOf(request)) && request.method.toUpperCase() === 'POST') return;
    const watch = watchOf(request, runtime);
    if (!watch) return;
    const watched: Watched = { watch };
    if (!publishing.has(Object.getPrototypeOf(request))) {
      watched.untap = tapBodyChunks(request, chunk => {
        if (!subscribed || watches.get(request) !== watched) return;
        watched.tapping = chunk;
        onChunkTapped({ watched, chunk });
      });
    }
    watches.set(request, watched);
    watching++;
    chunkChannels(true);
  });
  const onBodySent = guard<{ request: object }>('request body', m => {
    const watched = watches.get(m.request);
    if (!watched?.watch.bodySent) return;
    if (!watched.bodyPublished) silentBodies.add(Object.getPrototypeOf(m.request));
    watched.watch.bodySent();
  });
  const onHeaders = guard<{ request: object; response: UndiciResponse }>('response headers', m => {
    const watch = watches.get(m.request)?.watch;
    if (!watch) return;
    const status = typeof m.response?.statusCode === 'number' ? m.response.statusCode : undefined;
    // A response that opens no stream to watch (an error, JSON, a redirect: its next hop is a request of its own).
    if (!watch.responded(status, headerReaderOf(m.response?.headers))) stop(m.request);
  });
  const onTrailers = guard<{ request: object }>('response end', m => {
    watches.get(m.request)?.watch.ended(undefined, false);
    stop(m.request);
  });
  const onError = guard<{ request: object; error: unknown }>('request error', m => {
    watches.get(m.request)?.watch.ended(m.error ?? new Error('request failed'), isAbort(m.error));
    stop(m.request);
  });

  const always: [string, (message: unknown) => void][] = [
    [CHANNELS.create, onCreate],
    [CHANNELS.bodySent, onBodySent],
    [CHANNELS.headers, onHeaders],
    [CHANNELS.trailers, onTrailers],
    [CHANNELS.error, onError],
  ];
  for (const [name, fn] of always) diagnosticsChannel.subscribe(name, fn);
  return () => {
    subscribed = false;
    for (const [name, fn] of always) diagnosticsChannel.unsubscribe(name, fn);
    chunkChannels(false);
    delete global[INSTALLED];
  };
}

/**
 * Shadows `onData` on this one request object (undici 5 to 7 hand each response body chunk to it; 7.11 and later
 * also publish it from there, undici 8 has no such method and always publishes): `tap` gets the chunk first, then
 * undici's own method runs, unchanged, with the same arguments. Returns the function that takes the shadow off
 * (undici's prototype method shows through again); undefined when the request has no such method.
 */
function tapBodyChunks(request: object, tap: (chunk: Uint8Array) => void): (() => void) | undefined {
  const original = (request as { onData?: unknown }).onData;
  if (typeof original !== 'function') return undefined;
  const shadow = function onData(this: unknown, ...args: unknown[]) {
    tap(args[0] as Uint8Array);
    return original.apply(this, args);
  };
  Object.defineProperty(request, 'onData', { value: shadow, writable: true, configurable: true });
  return () => {
    if (Object.getOwnPropertyDescriptor(request, 'onData')?.value === shadow)
      delete (request as { onData?: unknown }).onData;
  };
}

/**
 * Whether an error that ends a request is the app stopping it (its signal, or a cancel of the body): undici passes
 * the abort reason through as it is, where a broken connection, a timeout or a bad response is one of undici's own
 * errors (UND_ERR_*), the parser's (HPE_*) or the socket's (ECONNRESET…), each with a string code.
 */
function isAbort(error: unknown): boolean {
  return typeof (error as { code?: unknown } | undefined)?.code !== 'string';
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

/**
 * Fail-loud mode's cut: undici's own abort of the request (set once it is connected, so before any byte of the
 * response), which errors the Response's body as a broken connection would. Queued as a microtask from inside the
 * chunk's publish: it runs before the promise jobs that carry that chunk on to the app's read, so the chunk never
 * arrives (an abort made inside the publish of a response's first chunk leaves fetch's body waiting forever on
 * undici 7.30).
 */
function cutOf(request: UndiciRequest & { abort?: unknown }): (error: unknown) => void {
  return error => {
    queueMicrotask(() => {
      try {
        if (typeof request.abort === 'function') request.abort(error);
      } catch {
        // Already ended: nothing left to cut.
      }
    });
  };
}

/**
 * Reads undici's headers: a flat `[name, value…]` array (values strings, Buffers, or arrays of them) or, before
 * undici 6, a raw `name: value\r\n` string. Only what is asked for is decoded.
 */
export function headerReaderOf(headers: unknown): (name: string) => string | undefined {
  if (typeof headers === 'string') {
    return name => {
      for (const line of headers.split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) return line.slice(colon + 1).trim();
      }
      return undefined;
    };
  }
  if (!Array.isArray(headers)) return () => undefined;
  // A response's names and values are Buffers: String() decodes them.
  return name => {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      const key = headers[i];
      if (key?.length !== name.length || String(key).toLowerCase() !== name) continue;
      const value = headers[i + 1];
      const text = Array.isArray(value) ? value.map(String).join(', ') : String(value);
      if (text !== '') return text;
    }
    return undefined;
  };
}

// Loaded on the first MCP exchange undici publishes (as the fetch wrapper loads its work: fetch-observer.ts).
const channelWatches = () => require('./undici-channel-watches') as typeof import('./undici-channel-watches');
