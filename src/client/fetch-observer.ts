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
 * Session GETs a patched SDK transport sends are claimed by it (patched-transport-scope.ts) and left to the patch.
 * What the wire cannot show, and the class patch can: a reconnect that dropped the cursor (`cursor_dropped` needs
 * the client's intent) and the client's onerror (fail-loud mode errors the stream instead).
 */
import { withEnteredContext } from '../shared/entered-context';
import { StreamForkDetected } from '../shared/errors';
import { observeBodyOnRead } from '../shared/response-body';
import { observePerRequestPost, perRequestPostOf } from '../per-request/client-exchange';
import type { FetchLike, HeadersInitLike, RequestInitLike, WebResponseLike } from '../shared/internal-types';
import { type ForkwatchRuntime, nowMs } from '../shared/runtime';
import { protocolHasResumability } from '../shared/session-id';
import { claimOwnFetchPost, isOwnFetchPost, isPatchedTransportGet } from './patched-transport-scope';
import { ResumeAttempt } from './resume-attempt';
import { type ForkReport, ResumedStream } from './resumed-stream';

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
    const method = String(init?.method ?? request?.method ?? 'GET').toUpperCase();
    if (method !== 'GET') return undefined;
    const header = headerReader(init?.headers ?? request?.headers);
    const sessionId = header('mcp-session-id');
    if (!sessionId || !header('accept')?.includes('text/event-stream')) return undefined;
    return { sessionId, protocolVersion: header('mcp-protocol-version'), cursor: header('last-event-id') };
  } catch {
    return undefined;
  }
}

function headerReader(headers: HeadersInitLike | undefined): (name: string) => string | undefined {
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

/** Installs the observer on `globalThis.fetch`; returns the function that takes it off again. */
export function installFetchObserver(runtime: ForkwatchRuntime): () => void {
  const original = globalThis.fetch as unknown as Fetch | undefined;
  if (typeof original !== 'function' || original[FETCH_MARK]) return () => {};
  const observed = function fetch(this: unknown, input: unknown, init?: RequestInitLike) {
    if (!runtime.enabled) return original.call(this, input, init);
    const post = perRequestPostOf(input, init);
    if (post) {
      // Already observed through a transport's own fetch, which called this one.
      if (isOwnFetchPost((init as { body: string }).body)) return original.call(this, input, init);
      return observePerRequestPost(original, this, input, init, post, runtime);
    }
    const get = sseGetOf(input, init);
    if (!get || !protocolHasResumability(get.protocolVersion) || isPatchedTransportGet(get.sessionId, get.cursor)) {
      return original.call(this, input, init);
    }
    return observeGet(original, this, input, init, get, runtime);
  };
  Object.defineProperty(observed, FETCH_MARK, { value: true });
  globalThis.fetch = observed as unknown as typeof globalThis.fetch;
  return () => {
    // Someone wrapped fetch after forkwatch: leave their wrapper in place; ours passes through once disabled.
    if (globalThis.fetch === (observed as unknown)) globalThis.fetch = original as unknown as typeof globalThis.fetch;
  };
}

/**
 * A transport's own fetch (its `fetch` option, which never reaches `globalThis.fetch` unless it calls it): its
 * protocol 2026-07-28 POSTs are observed as the global observer observes them, everything else passes through.
 */
export function observeOwnFetch(own: Fetch, runtime: ForkwatchRuntime): Fetch {
  if (own[FETCH_MARK]) return own;
  const observed = function fetch(this: unknown, input: unknown, init?: RequestInitLike) {
    if (!runtime.enabled) return own.call(this, input, init);
    const post = perRequestPostOf(input, init);
    if (!post) return own.call(this, input, init);
    const release = claimOwnFetchPost((init as { body: string }).body);
    let result: unknown;
    try {
      result = observePerRequestPost(own, this, input, init, post, runtime);
    } catch (error) {
      release();
      throw error;
    }
    Promise.resolve(result).then(release, release);
    return result;
  };
  Object.defineProperty(observed, FETCH_MARK, { value: true });
  return observed as unknown as Fetch;
}

function observeGet(
  original: Fetch,
  self: unknown,
  input: unknown,
  init: RequestInitLike | undefined,
  get: SseGet,
  runtime: ForkwatchRuntime,
) {
  let attempt: ResumeAttempt | undefined;
  try {
    if (get.cursor !== undefined) {
      const session = runtime.clientLedger.touch(get.sessionId, nowMs());
      attempt = new ResumeAttempt(runtime, {
        transport: 'streamable_http',
        session,
        sessionId: get.sessionId,
        protocolVersion: get.protocolVersion,
        cursor: get.cursor,
        heldCursor: get.cursor,
        lostAt: session.lostAt,
      });
    }
  } catch (error) {
    runtime.diag.error('starting a resume attempt failed; this stream is not checked', error);
  }
  // In the attempt's context, an HTTP instrumentation's span (and the trace context it injects) joins the resume:
  // when the process already runs in a context, as it does with one (entered-context.ts).
  const send = () => original.call(self, input, init);
  const result = attempt ? withEnteredContext(attempt.context, send) : send();
  const started = attempt;
  return Promise.resolve(result).then(
    response => {
      try {
        watchResponse(response, get, started, runtime);
      } catch (error) {
        runtime.diag.error('observing an SSE response failed; this stream is not checked', error);
      }
      return response;
    },
    error => {
      if (started) {
        const aborted = (error as { name?: unknown })?.name === 'AbortError';
        if (aborted) started.concludeInconclusive('cancelled');
        else started.concludeFailed(error);
      }
      throw error;
    },
  );
}

function watchResponse(
  response: WebResponseLike | null | undefined,
  get: SseGet,
  attempt: ResumeAttempt | undefined,
  runtime: ForkwatchRuntime,
) {
  const status = typeof response?.status === 'number' ? response.status : undefined;
  const contentType = String(response?.headers?.get?.('content-type') ?? '');
  const body = response?.body;
  if (status === undefined || status < 200 || status >= 300 || !body || !contentType.includes('text/event-stream')) {
    attempt?.concludeRejected(status);
    return;
  }
  observeBodyOnRead(
    response,
    body,
    () => observeBody(body, get, attempt, runtime),
    error => runtime.diag.error('observing an SSE stream failed; this stream is not checked', error),
  );
}

/** Fail-loud mode's report to a client seen only on the wire: its stream ends with the error. */
const errorTheStream: ForkReport = info => new StreamForkDetected(info);

function observeBody(
  body: ReadableStream<Uint8Array>,
  get: SseGet,
  attempt: ResumeAttempt | undefined,
  runtime: ForkwatchRuntime,
): ReadableStream<Uint8Array> {
  const session = runtime.clientLedger.touch(get.sessionId, nowMs());
  const resumed = new ResumedStream(
    { attempt, session, transport: 'streamable_http', cursor: get.cursor, reportFork: errorTheStream },
    runtime,
  );
  return resumed.observe(body);
}
