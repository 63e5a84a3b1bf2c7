/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reconnect storms, as one client transport sees them (issue 41). A server that answers a GET with 200 and a stream
 * that ends at once with no event makes the SDK client (2.4) reconnect after its first delay, about once a second,
 * forever: a graceful close resets its retry count, so `maxRetries` never trips. And since the empty stream gave it
 * no event id, the reconnect after an empty answer to a resume goes out without Last-Event-ID (typescript-sdk #2499).
 *
 * Each reconnect (sent, not only scheduled) of a stream that ended with no event within EMPTY_STREAM_WINDOW_MS of
 * opening is an empty reconnect, counted by whether it carries a cursor; the run of them is recorded when a stream of
 * the transport delivers an event again. An idle stream a balancer closes after its timeout lived longer than the window: not counted.
 * Two numbers per transport, on its state: gone with the transport.
 */
import { EMPTY_STREAM_WINDOW_MS } from '../../core/defaults';
import type { ClientTransportLabel, EmptyReconnectKind } from '../../shared/names';
import type { ForkwatchRuntime } from '../../shared/runtime';
import type { ResumedStream } from '../observer/resumed-stream';

export interface EmptyStreak {
  /** Empty reconnects in a row. */
  emptyStreak: number;
}

const ATTRS: Readonly<Record<EmptyReconnectKind, { transport: ClientTransportLabel; kind: EmptyReconnectKind }>> = {
  resume: { transport: 'streamable_http', kind: 'resume' },
  dropped_after_empty: { transport: 'streamable_http', kind: 'dropped_after_empty' },
  fresh: { transport: 'streamable_http', kind: 'fresh' },
};

/** The stream ended with no event, soon after it opened: an empty answer. */
export function endedEmpty(stream: ResumedStream): boolean {
  return (
    stream.lastId === undefined &&
    stream.endedAt !== undefined &&
    stream.endedAt - stream.openedAt < EMPTY_STREAM_WINDOW_MS
  );
}

/**
 * The SDK scheduled a reconnect after `ended` stream, with `cursor` as Last-Event-ID: the kind of empty reconnect it
 * will be if it goes out (counted then: reconnectSent), or undefined. A stream that delivered ends the run.
 * Counting waits for the send because a client that ends its session (DELETE, then close) makes the server close the
 * standalone stream, empty, and the SDK schedules a reconnect that its close() then cancels: every healthy short
 * session would count one.
 */
export function reconnectScheduled(
  streak: EmptyStreak,
  ended: ResumedStream,
  cursor: string | undefined,
  runtime: ForkwatchRuntime,
): EmptyReconnectKind | undefined {
  if (!endedEmpty(ended)) {
    streakEnded(streak, runtime);
    return undefined;
  }
  return cursor !== undefined ? 'resume' : ended.cursor !== undefined ? 'dropped_after_empty' : 'fresh';
}

/** A reconnect scheduled after an empty answer went out: one more in the run. */
export function reconnectSent(streak: EmptyStreak, kind: EmptyReconnectKind, runtime: ForkwatchRuntime): void {
  streak.emptyStreak++;
  runtime.instruments.clientEmptyReconnects.add(1, ATTRS[kind]);
}

/** A stream of the transport delivered an event: the run of empty reconnects, if any, is over. */
export function streakEnded(streak: EmptyStreak, runtime: ForkwatchRuntime): void {
  if (streak.emptyStreak === 0) return;
  runtime.instruments.clientEmptyReconnectStreak.record(streak.emptyStreak);
  streak.emptyStreak = 0;
}
