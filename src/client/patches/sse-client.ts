/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patch of the legacy HTTP+SSE client transport (`SSEClientTransport`, protocol 2024-11-05; deprecated but
 * still common). Its EventSource reconnects by itself, and the SDK's fetch wrapper replaces the headers the
 * EventSource sets, so a held Last-Event-ID never reaches the server (SDK PR #2475); the 2024-11-05 server
 * mints a new session on every GET. forkwatch sees each EventSource connection through the fetch the SDK
 * hands it, and judges every reconnect on its first event:
 * - `endpoint` with another sessionId: the reconnect landed in a new session (stream_changed);
 * - a cursor was held but not sent: cursor_dropped;
 * - otherwise the usual first-frame verdict on the message's id.
 * The verdict comes from EventSource events, after the SDK's own listeners, so fail-loud mode does not apply.
 */
import { observedPromise } from '../../shared/observed-promise';
import type { SessionRecord } from '../../core/ledger';
import type {
  EventSourceEventLike,
  EventSourceLike,
  FetchLike,
  HeadersInitLike,
  RequestInitLike,
  SseClientTransportLike,
  WebResponseLike,
  Wrap,
} from '../../shared/internal-types';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import { ResumeAttempt } from '../observer/resume-attempt';
import { ResumedStream } from '../observer/resumed-stream';
import { httpStatusOf } from './streamable-http-client';

export const SSE_CLIENT_METHODS = ['_startOrAuth'] as const;

interface LegacyState {
  session: SessionRecord | undefined;
  connections: number;
  endpointSession: string | undefined;
  /** The last event id seen: what the EventSource would resume from. */
  heldCursor: string | undefined;
  lostAt: number | undefined;
  attempt: ResumeAttempt | undefined;
  /** The observer of the current connection's stream: its first message decides a reconnect's verdict. */
  stream: ResumedStream | undefined;
}

const attached = new WeakSet<object>();
/** The fetch each transport's EventSource used before forkwatch wrapped it. */
const baseFetches = new WeakMap<object, FetchLike>();
let legacyCounter = 0;

export function patchSseClient(proto: SseClientTransportLike, runtime: ForkwatchRuntime, wrap: Wrap): void {
  wrap(
    proto,
    '_startOrAuth',
    original =>
      function startOrAuth(this: SseClientTransportLike, ...args: unknown[]) {
        let state: LegacyState | undefined;
        if (runtime.enabled) {
          try {
            state = observeConnections(this, runtime);
          } catch (error) {
            runtime.diag.error('observing a legacy SSE connection failed', error);
          }
        }
        const result = original.apply(this, args);
        if (state) {
          try {
            attachEventSource(this._eventSource, state, runtime);
          } catch (error) {
            runtime.diag.error('observing a legacy SSE stream failed', error);
          }
        }
        return result;
      },
  );
}

/** Routes the EventSource's requests through an observing fetch that delegates to the one the SDK would use. */
function observeConnections(transport: SseClientTransportLike, runtime: ForkwatchRuntime): LegacyState {
  const state: LegacyState = {
    session: undefined,
    connections: 0,
    endpointSession: undefined,
    heldCursor: undefined,
    lostAt: undefined,
    attempt: undefined,
    stream: undefined,
  };
  const init = transport._eventSourceInit;
  // _startOrAuth runs again after an auth retry: delegate to the fetch the SDK had before forkwatch's first wrap,
  // not to the previous observing fetch (wrappers would nest and every request would count once per start).
  let baseFetch = baseFetches.get(transport);
  if (baseFetch === undefined) {
    baseFetch = (init?.fetch ?? transport._fetch ?? globalThis.fetch) as FetchLike;
    baseFetches.set(transport, baseFetch);
  }
  const delegate = baseFetch;
  const observingFetch = (url: unknown, requestInit?: RequestInitLike) => {
    try {
      onRequest(state, requestInit, runtime);
    } catch (error) {
      runtime.diag.error('legacy SSE request observation failed', error);
    }
    const attempt = state.attempt;
    // The EventSource gets a promise that settles as the fetch's own does (shared/observed-promise.ts).
    return observedPromise(
      delegate(url, requestInit),
      (value: unknown) => {
        const res = value as WebResponseLike | null | undefined;
        if (attempt && !attempt.isConcluded && res && !res.ok) attempt.concludeRejected(res.status);
      },
      (error: unknown) => {
        if (attempt && !attempt.isConcluded) {
          const status = httpStatusOf(error);
          if (status !== undefined) attempt.concludeRejected(status);
          else attempt.concludeFailed(error);
        }
      },
      error => runtime.diag.error('legacy SSE response observation failed', error),
    );
  };
  transport._eventSourceInit = { ...init, fetch: observingFetch };
  return state;
}

function onRequest(state: LegacyState, requestInit: RequestInitLike | undefined, runtime: ForkwatchRuntime): void {
  state.connections++;
  if (state.connections === 1) {
    const session = runtime.clientLedger.touch(`legacy-sse#${++legacyCounter}`, nowMs());
    state.session = session;
    state.stream = new ResumedStream(
      { attempt: undefined, session, transport: 'sse', cursor: undefined, reportFork: undefined },
      runtime,
    );
    return;
  }
  // A reconnect of the EventSource: a resume attempt.
  const session = state.session!;
  const sent = readHeader(requestInit?.headers, 'last-event-id');
  const heldCursor = sent ?? state.heldCursor;
  const previous = state.attempt;
  const attempt = new ResumeAttempt(runtime, {
    transport: 'sse',
    session,
    sessionId: state.endpointSession,
    protocolVersion: undefined,
    cursor: sent,
    heldCursor: heldCursor ?? '',
    lostAt: state.lostAt,
  });
  state.attempt = attempt;
  if (heldCursor !== undefined && sent === undefined) {
    attempt.concludeCursorDropped(previous?.endedWithoutFrame() === true);
    if (attempt.outcome === 'forked') runtime.notifyFork(attempt.verdictInfo());
    return;
  }
  // A newer connection's verdict timer replaces the older one.
  state.stream?.stopTimer();
  // The fail-loud report does not apply: the verdict comes after the SDK's own listeners.
  state.stream = new ResumedStream(
    { attempt, session, transport: 'sse', cursor: sent, reportFork: undefined },
    runtime,
  );
  state.stream.armTimeout(() => {});
}

function attachEventSource(es: EventSourceLike | undefined, state: LegacyState, runtime: ForkwatchRuntime): void {
  if (!es || typeof es.addEventListener !== 'function' || attached.has(es)) return;
  attached.add(es);
  const pending = () => (state.attempt && !state.attempt.isConcluded ? state.attempt : undefined);

  es.addEventListener('error', () => {
    // CONNECTING: the connection was lost and the EventSource will reconnect.
    if (es.readyState === 0) state.lostAt = nowMs();
  });
  es.addEventListener('endpoint', (event: EventSourceEventLike | undefined) => {
    const sessionId = sessionIdOfEndpoint(event?.data);
    const attempt = pending();
    if (attempt) {
      if (state.endpointSession !== undefined && sessionId !== state.endpointSession) {
        attempt.concludeWithFirstFrame(undefined, { verdict: 'forked', reason: 'stream_changed' });
        runtime.notifyFork(attempt.verdictInfo());
      } else {
        attempt.concludeWithFirstFrame(undefined, { verdict: 'resumed', continuityVerified: false });
      }
    }
    state.endpointSession = sessionId;
  });
  es.addEventListener('message', (event: EventSourceEventLike | undefined) => {
    const id = typeof event?.lastEventId === 'string' && event.lastEventId !== '' ? event.lastEventId : undefined;
    const attempt = pending();
    const stream = state.stream;
    if (attempt && stream) {
      // The EventSource's lastEventId is sticky: unchanged from the cursor means this frame had no id.
      stream.firstFrame(id === attempt.init.heldCursor ? undefined : id);
    }
    if (id !== undefined && id !== state.heldCursor && stream) {
      state.heldCursor = id;
      stream.consume(id, nowMs());
    }
  });
}

function readHeader(headers: HeadersInitLike | undefined, name: string): string | undefined {
  try {
    if (!headers) return undefined;
    const value =
      typeof headers.get === 'function' ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
    return typeof value === 'string' && value !== '' ? value : undefined;
  } catch {
    return undefined;
  }
}

function sessionIdOfEndpoint(data: unknown): string | undefined {
  if (typeof data !== 'string') return undefined;
  try {
    return new URL(data, 'http://endpoint.invalid').searchParams.get('sessionId') ?? data;
  } catch {
    return data;
  }
}
