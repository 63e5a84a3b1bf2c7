/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patch of the streamable HTTP client transport (`StreamableHTTPClientTransport` of @modelcontextprotocol/sdk 1.x
 * and of @modelcontextprotocol/client 2.x: same method names and the same cursor handling).
 *
 * - `_startOrAuthSse(options)` sends every resume GET: `options.resumptionToken` is exactly the Last-Event-ID.
 *   A resume attempt (span + verdict) starts here.
 * - `_handleSseStream(stream, options)` receives the response body of that GET (and of POST streams). The SDK
 *   calls `options.onresumptiontoken` with every event id it takes in, after its parser and before the app sees the
 *   event: forkwatch hands it a wrapper of the app's callback, so the ledger hears of each event without a second
 *   parser. The body itself is wrapped only while a resume waits for its first frame (a fork must be seen before
 *   the SDK parses it, and withheld in fail-loud mode); every other stream reaches the SDK untouched.
 * - `_scheduleReconnection(options)` is where the SDK decides to reconnect after a stream ended (its options carry
 *   that stream's `onresumptiontoken`): forkwatch notes which cursor the lost stream held, to catch a reconnect that
 *   drops it (SDK issue #2499).
 * - `_commonHeaders()` builds the GET's headers: the trace context is added there for resume GETs (it is called
 *   synchronously at the start of `_startOrAuthSse`, while the attempt is marked on the transport's state).
 */
import { type SpanContext, propagation } from '@opentelemetry/api';
import { withEnteredContext } from '../../shared/entered-context';
import { StreamForkDetected } from '../../shared/errors';
import { observedPromise } from '../../shared/observed-promise';
import type {
  FetchLike,
  SdkMethod,
  StartSseOptionsLike,
  StreamableHttpClientTransportLike,
  WritableHeadersLike,
  Wrap,
} from '../../shared/internal-types';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import { protocolHasResumability } from '../../shared/session-id';
import type { EmptyReconnectKind } from '../../shared/names';
import type { ResumeVerdictInfo } from '../../shared/types';
import { observeOwnFetch } from '../wire/fetch-wrapper';
import { httpStatusOf } from './http-status';
import { type AnsweredBook, noteSentMessage, wasAnswered } from './foreign-responses';
import { claimPatchedGet } from '../observer/patched-transport-scope';
import { type EmptyStreak, reconnectScheduled, reconnectSent, streakEnded } from './reconnect-storms';
import { ResumeAttempt } from '../observer/resume-attempt';
import { type ForkReport, ResumedStream } from '../observer/resumed-stream';
import { type RevivalState, watchSentMessage } from './revived-sessions';

export { httpStatusOf };

export const STREAMABLE_HTTP_CLIENT_METHODS = [
  '_startOrAuthSse',
  '_handleSseStream',
  '_scheduleReconnection',
  '_commonHeaders',
  'send',
] as const;

interface TransportState extends EmptyStreak, RevivalState, AnsweredBook {
  fallbackKey: string;
  /** What each stream of this transport calls on its first event, made once per transport and runtime. */
  firstEvent: { runtime: ForkwatchRuntime; onFirstEvent: () => void } | undefined;
  /** The stream that ended last; `_scheduleReconnection` runs right after, for that stream. */
  lastEnded: ResumedStream | undefined;
  /** Fail-loud mode cut a forked stream: the SDK must not quietly reconnect it. */
  suppressNextReconnect: boolean;
  /** The resume attempt whose GET the SDK is building right now (set only during that synchronous call). */
  sendingResume: ResumeAttempt | undefined;
}

interface ReconnectInfo {
  heldCursor: string | undefined;
  lostAt: number;
  /** The span of the resume attempt the lost stream answered: the reconnect's span follows it. */
  follows: SpanContext | undefined;
  /** True when that attempt got no frame (inconclusive): a cursor dropped now is not a proven fork. */
  afterInconclusive: boolean;
  /** The lost stream ended empty: an empty reconnect of this kind, counted when it goes out (then cleared). */
  empty: EmptyReconnectKind | undefined;
}

const transportStates = new WeakMap<object, TransportState>();
/** Options objects the SDK passes to `_scheduleReconnection` and then, on the timer, to `_startOrAuthSse`. */
const reconnects = new WeakMap<object, ReconnectInfo>();
/** Resume attempts whose GET is under way, by the options object that reaches `_handleSseStream`. */
const attempts = new WeakMap<object, ResumeAttempt>();
/** What one of forkwatch's `onresumptiontoken` callbacks stands for. */
interface ReporterRecord {
  /** The app's own callback, called as it would have been. */
  readonly inner: unknown;
  /** The request whose POST opened the stream (kept through the stream's reconnects); undefined for a GET's. */
  readonly requestId: unknown;
  /** The stream it reports each event to: none yet for a request's until its stream opens, then the latest one. */
  stream: ResumedStream | undefined;
}
/**
 * forkwatch's `onresumptiontoken` callbacks: one per request (`send` hands it to the SDK with the request's id) or per
 * GET stream, kept by the SDK in the stream's reconnection options. Each new stream of it is reported to by the same
 * callback: no second wrapper and no copy of the options per stream (issue 50). Each callback holds its record under
 * a symbol of forkwatch's: not a weak map entry per request, which every garbage collection would trace (an
 * ephemeron). The callbacks are forkwatch's own functions; only the SDK holds them.
 */
const REPORTER_RECORD = Symbol('forkwatch.reporterRecord');

/** The record of one of forkwatch's callbacks; undefined for any other value (the app's own callback, ...). */
function reporterRecordOf(callback: unknown): ReporterRecord | undefined {
  return typeof callback === 'function'
    ? (callback as { [REPORTER_RECORD]?: ReporterRecord })[REPORTER_RECORD]
    : undefined;
}

let transportCounter = 0;

function stateOf(transport: object): TransportState {
  let state = transportStates.get(transport);
  if (!state) {
    state = {
      fallbackKey: `transport#${++transportCounter}`,
      lastEnded: undefined,
      suppressNextReconnect: false,
      sendingResume: undefined,
      firstEvent: undefined,
      emptyStreak: 0,
      revivedCounted: undefined,
      book: undefined,
      observedHandler: undefined,
    };
    transportStates.set(transport, state);
  }
  return state;
}

const nonEmpty = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** The Last-Event-ID the SDK will send for these `_startOrAuthSse` options (it sends none for an empty token). */
function cursorOf(options: unknown): string | undefined {
  const token = options && typeof options === 'object' ? (options as StartSseOptionsLike).resumptionToken : undefined;
  return typeof token === 'string' && token !== '' ? token : undefined;
}

/** The transport's session id; its getter is the host's, so a throw is caught (no closure: it runs per call). */
function sessionIdOf(t: StreamableHttpClientTransportLike): string | undefined {
  try {
    return nonEmpty(t.sessionId ?? t._sessionId);
  } catch {
    return undefined;
  }
}

function protocolVersionOf(t: StreamableHttpClientTransportLike): string | undefined {
  try {
    return nonEmpty(t.protocolVersion ?? t._protocolVersion);
  } catch {
    return undefined;
  }
}

type Method = SdkMethod<StreamableHttpClientTransportLike>;

export function patchStreamableHttpClient(
  proto: StreamableHttpClientTransportLike,
  runtime: ForkwatchRuntime,
  wrap: Wrap,
): void {
  for (const method of STREAMABLE_HTTP_CLIENT_METHODS) {
    wrap(proto, method, original => CLIENT_WRAPPERS[method](original as Method, runtime) as typeof original);
  }
}

/** One wrapper factory per method. */
const CLIENT_WRAPPERS: Readonly<
  Record<(typeof STREAMABLE_HTTP_CLIENT_METHODS)[number], (original: Method, runtime: ForkwatchRuntime) => Method>
> = {
  _startOrAuthSse: wrapStartOrAuthSse,
  _handleSseStream: wrapHandleSseStream,
  _scheduleReconnection: wrapScheduleReconnection,
  _commonHeaders: wrapCommonHeaders,
  send: wrapSend,
};

/** Every message sent: request ids, so a response to none of them is foreign (foreign-responses.ts). */
function wrapSend(original: Method, runtime: ForkwatchRuntime): Method {
  // Called for every message the client sends: the SDK's arguments forwarded as they came unless a request's stream
  // needs forkwatch's callback (markedArguments), with no array of ours otherwise (issue 50).
  return function send(this: StreamableHttpClientTransportLike, message: unknown) {
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    const args = arguments as unknown as unknown[];
    if (!runtime.enabled) return original.apply(this, args);
    const state = stateOf(this);
    noteSentMessage(this, state, message, runtime);
    if (runtime.settings.observeFetch) adoptOwnFetch(this, runtime);
    const sessionBefore = sessionIdOf(this);
    const result = original.apply(this, markedArguments(message, args, runtime));
    try {
      return watchSentMessage(state, message, sessionBefore, this, sessionIdOf, result, runtime);
    } catch (error) {
      runtime.diag.error('watching a sent message failed; this stream is not checked', error);
      return result;
    }
  };
}

/**
 * `send`'s own arguments, with the request's id on the `onresumptiontoken` the SDK hands the POST's stream: a callback
 * that calls the app's, if any, as it would have been called. The stream then knows the request it answers, and a
 * reconnect of it after the answer is not a resume (see answeredStream).
 */
function markedArguments(message: unknown, args: unknown[], runtime: ForkwatchRuntime): unknown[] {
  try {
    const id = (message as { id?: unknown } | null)?.id;
    if (typeof message !== 'object' || message === null || !('method' in message) || id === undefined) return args;
    const options = args[1];
    if (options !== undefined && (typeof options !== 'object' || options === null)) return args;
    const inner = (options as StartSseOptionsLike | undefined)?.onresumptiontoken;
    if (inner !== undefined && typeof inner !== 'function') return args;
    const reporter = newReporter({ inner, requestId: id, stream: undefined }, runtime);
    const marked = Array.prototype.slice.call(args);
    marked[1] = { ...(options as object | undefined), onresumptiontoken: reporter };
    return marked;
  } catch (error) {
    runtime.diag.error('marking a request stream failed', error);
    return args;
  }
}

/**
 * A transport given its own fetch sends its 2026-07-28 POSTs past the global fetch observer: the observer goes
 * around that fetch instead, once per transport (it passes everything else, and everything once disabled).
 */
function adoptOwnFetch(transport: StreamableHttpClientTransportLike, runtime: ForkwatchRuntime): void {
  try {
    const own = (transport as { _fetch?: unknown })._fetch;
    if (typeof own !== 'function') return;
    const observed = observeOwnFetch(own as FetchLike, runtime);
    if (observed !== own) (transport as { _fetch?: unknown })._fetch = observed;
  } catch (error) {
    runtime.diag.error("observing the transport's own fetch failed", error);
  }
}

function guarded(runtime: ForkwatchRuntime, what: string, fn: () => void): void {
  try {
    fn();
  } catch (error) {
    runtime.diag.error(`${what} failed; this stream is not checked`, error);
  }
}

/** `fn()`'s answer (what the host gets in place of `result`), or `result` itself if `fn` threw. */
function guardedOr(result: unknown, runtime: ForkwatchRuntime, what: string, fn: () => unknown): unknown {
  try {
    return fn();
  } catch (error) {
    runtime.diag.error(`${what} failed; this stream is not checked`, error);
    return result;
  }
}

/** Every resume GET: a resume attempt (span and verdict) starts here. */
function wrapStartOrAuthSse(original: Method, runtime: ForkwatchRuntime): Method {
  function startOrAuthSseObserved(this: StreamableHttpClientTransportLike, options: unknown, ...rest: unknown[]) {
    if (!options || typeof options !== 'object') return original.call(this, options, ...rest);
    if (answeredStream(this, options)) return original.call(this, options, ...rest);
    // The SDK's own retry of a resume GET (after authenticating) carries the same options: the same attempt.
    const retried = attempts.get(options);
    if (retried) return sendResumeGet(this, retried, () => original.call(this, options, ...rest));
    let attempt: ResumeAttempt | undefined;
    try {
      reconnectWentOut(this, options, runtime);
      attempt = beginAttempt(this, options, runtime);
    } catch (error) {
      runtime.diag.error('starting a resume attempt failed; this stream is not checked', error);
    }
    if (!attempt) return original.call(this, options, ...rest);
    const started = attempt;
    const result = sendResumeGet(this, started, () => original.call(this, options, ...rest));
    return guardedOr(result, runtime, 'watching a resume GET', () => watchGet(this, options, started, result, runtime));
  }
  const releaseFailed = (error: unknown) => runtime.diag.error('releasing a resume GET', error);
  return function startOrAuthSse(this: StreamableHttpClientTransportLike, options: unknown, ...rest: unknown[]) {
    if (!runtime.enabled) return original.call(this, options, ...rest);
    // The GET goes through fetch: the wire-level fetch observer must leave it to this patch.
    const release = claimPatchedGet(sessionIdOf(this), cursorOf(options));
    let result: unknown;
    try {
      result = startOrAuthSseObserved.call(this, options, ...rest);
    } catch (error) {
      release();
      throw error;
    }
    return observedPromise(result, release, release, releaseFailed);
  };
}

/**
 * Sends a resume GET: the SDK builds its headers (`_commonHeaders`) synchronously at the start of `_startOrAuthSse`,
 * where the attempt is found to add the trace context to. The SDK's fetch runs in the attempt's context when the
 * process already runs in one (entered-context.ts).
 */
function sendResumeGet(transport: object, attempt: ResumeAttempt, send: () => unknown): unknown {
  const state = stateOf(transport);
  const outer = state.sendingResume;
  state.sendingResume = attempt;
  try {
    return withEnteredContext(attempt.context, send);
  } finally {
    state.sendingResume = outer;
  }
}

/** Observes the outcome of a resume GET; returns what the SDK's caller gets in place of `result` (observed-promise.ts). */
function watchGet(
  transport: StreamableHttpClientTransportLike,
  options: object,
  started: ResumeAttempt,
  result: unknown,
  runtime: ForkwatchRuntime,
): unknown {
  return observedPromise(
    result,
    () => {
      attempts.delete(options);
      // Resolved without a stream: 405 (no SSE offered) or an auth detour.
      if (!started.isConcluded && !openedAttempts.has(started)) started.concludeRejected(undefined);
    },
    (error: unknown) => {
      attempts.delete(options);
      const status = httpStatusOf(error);
      if (status !== undefined) started.concludeRejected(status);
      // The application closed the transport while the GET was under way: nothing to judge.
      else if (transport._abortController?.signal?.aborted === true) started.concludeInconclusive('cancelled');
      else started.concludeFailed(error);
    },
    error => runtime.diag.error('judging a resume GET failed', error),
  );
}

/** The response body of every GET and POST stream, and the SDK's per-stream options: see the file comment. */
function wrapHandleSseStream(original: Method, runtime: ForkwatchRuntime): Method {
  return function handleSseStream(
    this: StreamableHttpClientTransportLike,
    stream?: unknown,
    options?: unknown,
    ...rest: unknown[]
  ) {
    let body = stream as ReadableStream<Uint8Array> | null | undefined;
    let opts = options;
    if (runtime.enabled && body && typeof body.getReader === 'function' && opts && typeof opts === 'object') {
      const source = body;
      const sourceOptions = opts as StartSseOptionsLike;
      guarded(runtime, 'observing an SSE stream', () => {
        const observed = observeClientStream(this, source, sourceOptions, runtime);
        if (!observed) return;
        body = observed.body;
        opts = observed.options;
      });
    }
    return original.call(this, body, opts, ...rest);
  };
}

/** Where the SDK decides to reconnect after a stream ended: notes which cursor the lost stream held. */
function wrapScheduleReconnection(original: Method, runtime: ForkwatchRuntime): Method {
  return function scheduleReconnection(this: StreamableHttpClientTransportLike, options?: unknown, ...rest: unknown[]) {
    if (runtime.enabled) {
      let suppress = false;
      guarded(runtime, 'tracking a reconnection', () => {
        streamEnded(options);
        suppress = noteReconnection(this, options, runtime);
      });
      // Fail-loud mode: the forked stream was cut on purpose; the application re-establishes the session.
      if (suppress) return undefined;
    }
    return original.call(this, options, ...rest);
  };
}

/**
 * The stream these reconnection options are for has ended (a stream whose body forkwatch did not wrap: no one else
 * saw it end). Later retries of the same reconnection find it ended already.
 */
function streamEnded(options: unknown): void {
  const reporter =
    options && typeof options === 'object' ? (options as StartSseOptionsLike).onresumptiontoken : undefined;
  const stream = reporterRecordOf(reporter)?.stream;
  if (stream && stream.endedAt === undefined) stream.onEnd();
}

/** Remembers the cursor a reconnect should carry; true when fail-loud mode must stop this reconnect. */
function noteReconnection(
  transport: StreamableHttpClientTransportLike,
  options: unknown,
  runtime: ForkwatchRuntime,
): boolean {
  const state = stateOf(transport);
  if (state.suppressNextReconnect) {
    state.suppressNextReconnect = false;
    return true;
  }
  if (options && typeof options === 'object' && !reconnects.has(options)) {
    const ended = state.lastEnded;
    state.lastEnded = undefined;
    reconnects.set(options, {
      heldCursor: ended ? (ended.lastId ?? ended.cursor) : undefined,
      lostAt: ended?.endedAt ?? nowMs(),
      follows: ended?.attempt?.span.spanContext(),
      afterInconclusive: ended?.attempt?.endedWithoutFrame() === true,
      empty: ended ? reconnectScheduled(state, ended, cursorOf(options), runtime) : undefined,
    });
  }
  return false;
}

/** The GET's headers: the trace context is added there for resume GETs. */
function wrapCommonHeaders(original: Method, runtime: ForkwatchRuntime): Method {
  // Called for every request the SDK sends: its arguments forwarded as they came, with no array of ours (issue 50).
  return function commonHeaders(this: StreamableHttpClientTransportLike) {
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    const result = original.apply(this, arguments as unknown as unknown[]);
    const resuming = transportStates.get(this)?.sendingResume;
    if (!resuming || !runtime.enabled || !runtime.settings.propagateContext) return result;
    const ctx = resuming.context;
    // A Headers in every version (`_commonHeaders(): Promise<Headers>`); its methods are checked before use.
    return Promise.resolve(result as Promise<WritableHeadersLike | null | undefined>).then(headers => {
      guarded(runtime, 'propagating trace context', () => {
        if (headers && typeof headers.set === 'function' && typeof headers.has === 'function') {
          propagation.inject(ctx, headers, {
            set: (carrier: WritableHeadersLike, key: string, value: string) => {
              if (!carrier.has(key)) carrier.set(key, value);
            },
          });
        }
      });
      return headers;
    });
  };
}

const openedAttempts = new WeakSet<ResumeAttempt>();

/**
 * True when these `_startOrAuthSse` options reconnect the stream of a request that was answered. The SDK 1.x client
 * (1.32.2 at least) takes only a *result* as the end of a request's stream: after a JSON-RPC error on a stream with an
 * event id (the 2.x server's priming event) it resumes the stream, retries, and reconnects without a cursor, every
 * time. Nothing of an answered request is left to lose: no resume attempt, no empty reconnect.
 */
function answeredStream(transport: object, options: object): boolean {
  const reporter = (options as StartSseOptionsLike).onresumptiontoken;
  const requestId = reporterRecordOf(reporter)?.requestId;
  return requestId !== undefined && wasAnswered(transportStates.get(transport), requestId);
}

/** The SDK sends a GET it scheduled after a stream ended: an empty reconnect is counted now, once (reconnect-storms.ts). */
function reconnectWentOut(transport: object, options: object, runtime: ForkwatchRuntime): void {
  const reconnect = reconnects.get(options);
  if (reconnect?.empty === undefined) return;
  reconnectSent(stateOf(transport), reconnect.empty, runtime);
  reconnect.empty = undefined;
}

function beginAttempt(
  transport: StreamableHttpClientTransportLike,
  options: StartSseOptionsLike,
  runtime: ForkwatchRuntime,
): ResumeAttempt | undefined {
  const protocolVersion = protocolVersionOf(transport);
  if (!protocolHasResumability(protocolVersion)) return undefined;
  const cursor = cursorOf(options);
  const reconnect = reconnects.get(options);
  const heldCursor = cursor ?? reconnect?.heldCursor;
  if (heldCursor === undefined) return undefined; // a fresh stream, not a resume
  const sessionId = sessionIdOf(transport);
  const session = runtime.clientLedger.touch(sessionId ?? stateOf(transport).fallbackKey, nowMs());
  const attempt = new ResumeAttempt(runtime, {
    transport: 'streamable_http',
    session,
    sessionId,
    protocolVersion,
    cursor,
    heldCursor,
    lostAt: reconnect?.lostAt ?? session.lostAt,
    follows: reconnect?.follows,
  });
  if (cursor === undefined) {
    // Right after a resume that ended without a frame, the new stream's first frame is judged against the cursor
    // (resumed-stream.ts); otherwise a live process held the stream and dropping the cursor is a fork at once.
    if (reconnect?.afterInconclusive === true) attempt.awaitCursorlessFrame();
    else attempt.concludeCursorDropped(false);
  }
  if (attempt.outcome === 'forked') {
    const info = attempt.verdictInfo(undefined);
    runtime.notifyFork(info);
    if (runtime.settings.onFork === 'abort') failLoudReport(transport, runtime)(info);
  }
  attempts.set(options, attempt);
  return attempt;
}

/**
 * Fail-loud mode's report of a fork to this client: the SDK must not quietly reconnect the cut stream, and the
 * transport's onerror hears of it. The stream then ends cleanly.
 */
function failLoudReport(transport: StreamableHttpClientTransportLike, runtime: ForkwatchRuntime): ForkReport {
  return (info: ResumeVerdictInfo) => {
    stateOf(transport).suppressNextReconnect = true;
    const error = new StreamForkDetected(info);
    try {
      transport.onerror?.(error);
    } catch (hostError) {
      runtime.diag.error('the transport onerror handler threw on StreamForkDetected', hostError);
    }
    return undefined;
  };
}

/** A stream as the SDK gets it: its body (wrapped only while forkwatch needs it) and its options. */
interface ObservedClientStream {
  body: ReadableStream<Uint8Array>;
  options: StartSseOptionsLike;
}

function observeClientStream(
  transport: StreamableHttpClientTransportLike,
  stream: ReadableStream<Uint8Array>,
  options: StartSseOptionsLike,
  runtime: ForkwatchRuntime,
): ObservedClientStream | undefined {
  if (!protocolHasResumability(protocolVersionOf(transport))) return undefined;
  const attempt = attempts.get(options);
  if (attempt) openedAttempts.add(attempt);
  const state = stateOf(transport);
  const sessionId = sessionIdOf(transport);
  const session = runtime.clientLedger.touch(sessionId ?? state.fallbackKey, nowMs());
  // An app's callback that is not a function makes the SDK throw on the first id: it stays as given, and the body is
  // observed to its end instead.
  const given = options.onresumptiontoken;
  const idsFromClient = given === undefined || given === null || typeof given === 'function';
  const resumed = new ResumedStream(
    {
      attempt,
      session,
      transport: 'streamable_http',
      cursor: cursorOf(options),
      // Only fail-loud mode reports a fork to the client (the stream reads the mode once, as it opens).
      reportFork: runtime.settings.onFork === 'abort' ? failLoudReport(transport, runtime) : undefined,
      endedInto: state,
      idsFromClient,
      onFirstEvent: firstEventOf(state, runtime),
    },
    runtime,
  );
  return {
    body: resumed.needsBody ? resumed.observe(stream) : stream,
    options: idsFromClient ? reportedOptions(options, given, resumed, runtime) : options,
  };
}

/** Ends a run of empty reconnects (reconnect-storms.ts): one function per transport, not one per stream. */
function firstEventOf(state: TransportState, runtime: ForkwatchRuntime): () => void {
  if (state.firstEvent?.runtime !== runtime) {
    state.firstEvent = { runtime, onFirstEvent: () => streakEnded(state, runtime) };
  }
  return state.firstEvent.onFirstEvent;
}

/**
 * The options the SDK reads this stream with: its `onresumptiontoken` reports every event the SDK takes in to
 * `stream`. forkwatch's own callback (a request's, or an earlier stream's that the SDK carried into its reconnection)
 * now reports to this stream, with the options as they are; otherwise a callback of forkwatch's wraps the app's.
 */
function reportedOptions(
  options: StartSseOptionsLike,
  given: unknown,
  stream: ResumedStream,
  runtime: ForkwatchRuntime,
): StartSseOptionsLike {
  const own = reporterRecordOf(given);
  // A callback whose stream is still live keeps it: this stream gets a callback of its own.
  if (own !== undefined && (own.stream === undefined || own.stream.endedAt !== undefined)) {
    own.stream = stream;
    return options;
  }
  const inner = own !== undefined ? own.inner : given;
  return { ...options, onresumptiontoken: newReporter({ inner, requestId: own?.requestId, stream }, runtime) };
}

/**
 * A callback the SDK calls for every event it takes in (after its parser, before the app sees the event): the
 * record's stream records the id, then the app's own callback runs as it would have (its result and its errors are
 * the app's).
 */
function newReporter(record: ReporterRecord, runtime: ForkwatchRuntime): (id: unknown) => unknown {
  const reporter = function onresumptiontoken(this: unknown, id: unknown) {
    const stream = record.stream;
    if (stream !== undefined) {
      try {
        stream.onClientEvent(id);
      } catch (error) {
        runtime.diag.error('recording an SSE event failed', error);
      }
    }
    const inner = record.inner;
    // biome-ignore lint/complexity/noArguments: forwards whatever the SDK passes, without copying it
    return typeof inner === 'function' ? inner.apply(this, arguments) : undefined;
  };
  (reporter as { [REPORTER_RECORD]?: ReporterRecord })[REPORTER_RECORD] = record;
  return reporter;
}
