/**
 * Patch of the streamable HTTP client transport (`StreamableHTTPClientTransport` of @modelcontextprotocol/sdk 1.x
 * and of @modelcontextprotocol/client 2.x: same method names and the same cursor handling).
 *
 * - `_startOrAuthSse(options)` sends every resume GET: `options.resumptionToken` is exactly the Last-Event-ID.
 *   A resume attempt (span + verdict) starts here.
 * - `_handleSseStream(stream, options)` receives the response body of that GET (and of POST streams): the body
 *   is wrapped so every frame is seen before the SDK parses it.
 * - `_scheduleReconnection(options)` is where the SDK decides to reconnect after a stream ended: forkwatch notes
 *   which cursor the lost stream held, to catch a reconnect that drops it (SDK issue #2499).
 * - `_commonHeaders()` builds the GET's headers: the trace context is added there for resume GETs.
 */
import { context, createContextKey, propagation } from '@opentelemetry/api';
import { eventIdKey } from '../core/event-id';
import type { SessionRecord } from '../core/ledger';
import { StreamForkDetected } from '../errors';
import type {
  StartSseOptionsLike,
  StreamableHttpClientTransportLike,
  WritableHeadersLike,
  Wrap,
} from '../internal-types';
import { type ForkwatchRuntime, nowMs } from '../runtime';
import { protocolHasResumability } from '../session-id';
import { FirstFrameWatch } from './first-frame-watch';
import { noteSentMessage } from './foreign-responses';
import { type StreamGate, observeStream } from './observed-stream';
import { runAsPatchedTransport } from './patched-transport-scope';
import { ResumeAttempt } from './resume-attempt';

export const STREAMABLE_HTTP_CLIENT_METHODS = [
  '_startOrAuthSse',
  '_handleSseStream',
  '_scheduleReconnection',
  '_commonHeaders',
  'send',
] as const;

/** What forkwatch remembers of one SSE stream of a transport. */
interface StreamRecord {
  /** Last-Event-ID this stream was opened with. */
  cursor: string | undefined;
  /** Last truthy id seen on it: what the SDK would resume from. */
  lastId: string | undefined;
  endedAt: number | undefined;
}

interface TransportState {
  fallbackKey: string;
  /** The stream that ended last; `_scheduleReconnection` runs right after, for that stream. */
  lastEnded: StreamRecord | undefined;
  /** Fail-loud mode cut a forked stream: the SDK must not quietly reconnect it. */
  suppressNextReconnect: boolean;
}

interface ReconnectInfo {
  heldCursor: string | undefined;
  lostAt: number;
}

const RESUME_CONTEXT = createContextKey('forkwatch.client.resume');
const transportStates = new WeakMap<object, TransportState>();
/** Options objects the SDK passes to `_scheduleReconnection` and then, on the timer, to `_startOrAuthSse`. */
const reconnects = new WeakMap<object, ReconnectInfo>();
/** Resume attempts whose GET is under way, by the options object that reaches `_handleSseStream`. */
const attempts = new WeakMap<object, ResumeAttempt>();
let transportCounter = 0;

function stateOf(transport: object): TransportState {
  let state = transportStates.get(transport);
  if (!state) {
    state = { fallbackKey: `transport#${++transportCounter}`, lastEnded: undefined, suppressNextReconnect: false };
    transportStates.set(transport, state);
  }
  return state;
}

function readString(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === 'string' && value !== '' ? value : undefined;
  } catch {
    return undefined;
  }
}

const sessionIdOf = (t: StreamableHttpClientTransportLike) => readString(() => t.sessionId ?? t._sessionId);
const protocolVersionOf = (t: StreamableHttpClientTransportLike) =>
  readString(() => t.protocolVersion ?? t._protocolVersion);

/** HTTP status carried by the SDK's errors: `code` in 1.x (StreamableHTTPError), `status` in 2.x (SdkHttpError). */
export function httpStatusOf(error: unknown): number | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const e = error as { status?: unknown; code?: unknown; data?: { status?: unknown } };
  for (const v of [e.status, e.data?.status, e.code]) {
    if (typeof v === 'number' && v >= 100 && v <= 599) return v;
  }
  return undefined;
}

export function patchStreamableHttpClient(
  proto: StreamableHttpClientTransportLike,
  runtime: ForkwatchRuntime,
  wrap: Wrap,
): void {
  const guard = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      runtime.diag.error(`${what} failed; this stream is not checked`, error);
    }
  };

  wrap(proto, '_startOrAuthSse', original => {
    function startOrAuthSseObserved(this: StreamableHttpClientTransportLike, options: unknown, ...rest: unknown[]) {
      if (!options || typeof options !== 'object' || attempts.has(options)) {
        return original.call(this, options, ...rest);
      }
      let attempt: ResumeAttempt | undefined;
      guard('starting a resume attempt', () => {
        attempt = beginAttempt(this, options, runtime);
      });
      if (!attempt) return original.call(this, options, ...rest);
      const started = attempt;
      const result = context.with(started.context.setValue(RESUME_CONTEXT, true), () =>
        original.call(this, options, ...rest),
      );
      // Observe the outcome without touching the promise the SDK's caller gets.
      Promise.resolve(result).then(
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
          else if (this._abortController?.signal?.aborted === true) started.concludeInconclusive('cancelled');
          else started.concludeFailed(error);
        },
      );
      return result;
    }
    return function startOrAuthSse(this: StreamableHttpClientTransportLike, options: unknown, ...rest: unknown[]) {
      // The GET goes through fetch: the wire-level fetch observer must leave it to this patch.
      if (!runtime.enabled) return original.call(this, options, ...rest);
      return runAsPatchedTransport(() => startOrAuthSseObserved.call(this, options, ...rest));
    };
  });

  wrap(
    proto,
    '_handleSseStream',
    original =>
      function handleSseStream(
        this: StreamableHttpClientTransportLike,
        stream: ReadableStream<Uint8Array> | null | undefined,
        options: StartSseOptionsLike | undefined,
        ...rest: unknown[]
      ) {
        let body = stream;
        if (runtime.enabled && stream && typeof stream.getReader === 'function') {
          guard('observing an SSE stream', () => {
            body = observeClientStream(this, stream, options, runtime) ?? stream;
          });
        }
        return original.call(this, body, options, ...rest);
      },
  );

  wrap(
    proto,
    '_scheduleReconnection',
    original =>
      function scheduleReconnection(this: StreamableHttpClientTransportLike, options: unknown, ...rest: unknown[]) {
        if (runtime.enabled) {
          let suppress = false;
          guard('tracking a reconnection', () => {
            const state = stateOf(this);
            if (state.suppressNextReconnect) {
              state.suppressNextReconnect = false;
              suppress = true;
              return;
            }
            if (options && typeof options === 'object' && !reconnects.has(options)) {
              const ended = state.lastEnded;
              state.lastEnded = undefined;
              reconnects.set(options, {
                heldCursor: ended ? (ended.lastId ?? ended.cursor) : undefined,
                lostAt: ended?.endedAt ?? nowMs(),
              });
            }
          });
          // Fail-loud mode: the forked stream was cut on purpose; the application re-establishes the session.
          if (suppress) return undefined;
        }
        return original.call(this, options, ...rest);
      },
  );

  wrap(
    proto,
    'send',
    original =>
      function send(this: StreamableHttpClientTransportLike, message: unknown, ...rest: unknown[]) {
        if (runtime.enabled) noteSentMessage(this, message, runtime);
        return original.call(this, message, ...rest);
      },
  );

  wrap(
    proto,
    '_commonHeaders',
    original =>
      function commonHeaders(this: StreamableHttpClientTransportLike, ...args: unknown[]) {
        const result = original.apply(this, args);
        const ctx = context.active();
        if (!runtime.enabled || !runtime.settings.propagateContext || ctx.getValue(RESUME_CONTEXT) !== true) {
          return result;
        }
        // A Headers in every version (`_commonHeaders(): Promise<Headers>`); its methods are checked before use.
        return Promise.resolve(result as Promise<WritableHeadersLike | null | undefined>).then(headers => {
          guard('propagating trace context', () => {
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
      },
  );
}

const openedAttempts = new WeakSet<ResumeAttempt>();

function beginAttempt(
  transport: StreamableHttpClientTransportLike,
  options: StartSseOptionsLike,
  runtime: ForkwatchRuntime,
): ResumeAttempt | undefined {
  const protocolVersion = protocolVersionOf(transport);
  if (!protocolHasResumability(protocolVersion)) return undefined;
  const token = options.resumptionToken;
  const cursor = typeof token === 'string' && token !== '' ? token : undefined;
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
  });
  if (cursor === undefined) {
    attempt.concludeCursorDropped();
    reportFork(transport, attempt, undefined, runtime);
  }
  attempts.set(options, attempt);
  return attempt;
}

/** Runs the fork hook and, in fail-loud mode, tells the application through the transport's onerror. */
function reportFork(
  transport: StreamableHttpClientTransportLike,
  attempt: ResumeAttempt,
  firstId: string | undefined,
  runtime: ForkwatchRuntime,
) {
  const info = attempt.verdictInfo(firstId);
  runtime.notifyFork(info);
  if (runtime.settings.onFork !== 'abort') return;
  stateOf(transport).suppressNextReconnect = true;
  const error = new StreamForkDetected(info);
  try {
    transport.onerror?.(error);
  } catch (hostError) {
    runtime.diag.error('the transport onerror handler threw on StreamForkDetected', hostError);
  }
}

function observeClientStream(
  transport: StreamableHttpClientTransportLike,
  stream: ReadableStream<Uint8Array>,
  options: StartSseOptionsLike | undefined,
  runtime: ForkwatchRuntime,
): ReadableStream<Uint8Array> | undefined {
  if (!protocolHasResumability(protocolVersionOf(transport))) return undefined;
  const attempt = options && typeof options === 'object' ? attempts.get(options) : undefined;
  if (attempt) openedAttempts.add(attempt);
  const state = stateOf(transport);
  const sessionId = sessionIdOf(transport);
  const session: SessionRecord = runtime.clientLedger.touch(sessionId ?? state.fallbackKey, nowMs());
  const token = options?.resumptionToken;
  const record: StreamRecord = {
    cursor: typeof token === 'string' && token !== '' ? token : undefined,
    lastId: undefined,
    endedAt: undefined,
  };
  const abortMode = runtime.settings.onFork === 'abort';
  const instruments = runtime.instruments;
  const watch = new FirstFrameWatch(attempt, session, runtime);
  // A cursor_dropped verdict is reached before any frame: in fail-loud mode that stream is cut at once.
  let cut = abortMode && attempt !== undefined && attempt.outcome === 'forked';
  const gate: StreamGate = { holding: () => abortMode && watch.isPending, cut: () => cut };

  const observed = observeStream(
    stream,
    {
      onFrame(id) {
        const now = nowMs();
        const verdict = watch.judge(id);
        if (verdict?.verdict === 'forked' && attempt) {
          if (abortMode) cut = true;
          reportFork(transport, attempt, id, runtime);
        }
        // A frame withheld in fail-loud mode never reached the application: it was not consumed.
        if (cut || !id) return;
        record.lastId = id;
        if (session.consume(eventIdKey(id), now))
          instruments.clientDuplicateEvents.add(1, { transport: 'streamable_http' });
      },
      onEnd() {
        record.endedAt = nowMs();
        session.lostAt = record.endedAt;
        state.lastEnded = record;
        watch.endWithoutFrame('stream_ended');
      },
      onCancel() {
        watch.endWithoutFrame('cancelled');
      },
    },
    gate,
    error => runtime.diag.error('SSE frame observer failed', error),
  );
  watch.armTimeout(() => observed.release());
  if (cut) observed.cutNow(new Error('forkwatch: resumed without its cursor (fail-loud mode)'));
  return observed.readable;
}
