/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Revived sessions, as the client sees them (issue 41): a server that lost a session and answers it as a new one
 * instead of the spec's 404. Everything the old session had there (subscriptions, log level, pending events) is gone
 * and nothing errors. Seen on every message the transport sends after the session worked (it held a session id):
 *
 * - `new_session_id`: the answer carried another Mcp-Session-Id, and the SDK adopted it silently;
 * - `not_initialized`: the answer was "initialize first" (the SDK's own 400 "Server not initialized" from a
 *   transport the app created for the id without hydrating it), matched exactly.
 *
 * Once per session id of a transport. An `initialize` is never counted: a client that starts over knows it did.
 */
import type { ClientRevivedReason } from '../../shared/names';
import { type SettlementObserver, observeSettlement } from '../../shared/observed-promise';
import type { ForkwatchRuntime } from '../../shared/runtime';
import { httpStatusOf } from './http-status';

export interface RevivalState {
  /** The session id last counted revived: a session is counted once. */
  revivedCounted: string | undefined;
}

const ATTRS: Readonly<Record<ClientRevivedReason, { transport: 'streamable_http'; reason: ClientRevivedReason }>> = {
  new_session_id: { transport: 'streamable_http', reason: 'new_session_id' },
  not_initialized: { transport: 'streamable_http', reason: 'not_initialized' },
};

/**
 * The SDK's answer to a message for a session its transport never initialized (1.x and 2.x servers alike: a 400 whose
 * JSON-RPC error message is exactly this). Only that: a 4xx that merely says "not initialized" (an auth layer's "JWT
 * issuer not initialized") is not a session answered as new.
 */
const SDK_NOT_INITIALIZED_STATUS = 400;
const SDK_NOT_INITIALIZED = /(?:^|[^\w ])Bad Request: Server not initialized(?:$|[^\w ])/;

function isInitialize(message: unknown): boolean {
  return (message as { method?: unknown } | null)?.method === 'initialize';
}

/**
 * Watches the answer to one message sent while the transport held `sessionBefore`; `sessionNow(transport)` reads the
 * id the transport holds after it. Returns what the SDK's caller gets in place of `result`: a promise that settles as
 * it does (shared/observed-promise.ts), so a rejection nobody awaits is still the host's unhandled rejection.
 */
export function watchSentMessage<T>(
  state: RevivalState,
  message: unknown,
  sessionBefore: string | undefined,
  transport: T,
  sessionNow: (transport: T) => string | undefined,
  result: unknown,
  runtime: ForkwatchRuntime,
): unknown {
  if (sessionBefore === undefined || isInitialize(message)) return result;
  return observeSettlement(result, new SentMessageWatch(state, sessionBefore, transport, sessionNow, runtime));
}

/** One sent message's answer: a new session id or the SDK's "Server not initialized" counts the session revived. */
class SentMessageWatch<T> implements SettlementObserver {
  constructor(
    private readonly state: RevivalState,
    private readonly sessionBefore: string,
    private readonly transport: T,
    private readonly sessionNow: (transport: T) => string | undefined,
    private readonly runtime: ForkwatchRuntime,
  ) {}

  fulfilled(): void {
    const now = this.sessionNow(this.transport);
    if (now !== undefined && now !== this.sessionBefore) this.count('new_session_id');
  }

  rejected(error: unknown): void {
    if (isSdkNotInitialized(error)) this.count('not_initialized');
  }

  observerFailed(error: unknown): void {
    this.runtime.diag.error('watching a sent message failed', error);
  }

  /** A session is counted once. */
  private count(reason: ClientRevivedReason): void {
    if (this.state.revivedCounted === this.sessionBefore) return;
    this.state.revivedCounted = this.sessionBefore;
    this.runtime.instruments.clientRevivedSessions.add(1, ATTRS[reason]);
  }
}

/** Whether a failed send is the SDK's own "Server not initialized" answer, exactly. */
export function isSdkNotInitialized(error: unknown): boolean {
  return httpStatusOf(error) === SDK_NOT_INITIALIZED_STATUS && SDK_NOT_INITIALIZED.test(messageOf(error));
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : '';
}
