/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Revived sessions and empty repeated GETs, as one session transport sees them (issue 41).
 *
 * - Revived: the SDK's multi-node hydration pattern (an app that creates a transport for an Mcp-Session-Id it does
 *   not hold and marks it initialized under that id) answers a lost session as a live one instead of the spec's 404.
 *   A transport's first request that already carries a session id is that: a session this process never held (a
 *   session this process initialized had its first request, `initialize`, without one). It counts once the
 *   transport accepted it (2xx; the SDK answers an unhydrated transport 400 "Server not initialized") and the
 *   session showed whether anything was restored: `restored` only on proof, a resume its event store replayed events of the session on (a replay of 0 events is
 *   no proof: `empty`);
 *   `empty` at the first sign of nothing: a resume the store could not serve, a GET with no cursor to restore from
 *   (the client's stream had nothing), or the transport closed first.
 * - Empty repeated GETs: a GET of the session that comes within EMPTY_STREAM_WINDOW_MS of the previous GET, which
 *   was answered 200 and delivered nothing since (no replayed or live event on a GET stream): the previous answer
 *   was empty, and the client is reconnecting at once. A storm repeats this about once a second; an idle stream a
 *   balancer closes after its timeout comes back later than the window.
 *
 * A few numbers per transport, kept on its observer: gone with the transport.
 */
import { EMPTY_STREAM_WINDOW_MS } from '../../../core/defaults';
import type { ServerResumeOutcome, ServerTransportLabel } from '../../../shared/names';
import { nowMs } from '../../../shared/runtime';
import type { ServerRuntime } from '../../server-runtime';

const TRANSPORT_ATTRS: { transport: ServerTransportLabel } = { transport: 'streamable_http' };
const RESTORED = { state: 'restored' } as const;
const EMPTY = { state: 'empty' } as const;

type Evidence = typeof RESTORED | typeof EMPTY | undefined;

enum Revival {
  /** No request yet. */
  Unseen,
  /** The first request carried a session id: waiting for its answer. */
  Candidate,
  /** Accepted: waiting for what the session shows of its state. */
  Accepted,
  Decided,
}

export class SessionRevival {
  private revival = Revival.Unseen;
  /** What the session showed before its first request was answered. */
  private evidence: Evidence = undefined;
  private lastGetAt: number | undefined = undefined;
  private lastGetServed = false;
  private deliveredSinceGet = 0;

  /** No request seen yet: the next one's session id decides whether the session may be a revived one. */
  get awaitsFirstRequest(): boolean {
    return this.revival === Revival.Unseen;
  }

  /**
   * Every request the transport handles, before the SDK does: from a first one that carries an id, every request is
   * a candidate until one is accepted (a resume the store refused comes before the POST that succeeds).
   */
  requestStarted(claimedSessionId: string | undefined): boolean {
    if (this.revival === Revival.Unseen) {
      this.revival = claimedSessionId === undefined ? Revival.Decided : Revival.Candidate;
    }
    return this.revival === Revival.Candidate;
  }

  /** The answer to the candidate: a 2xx accepted the session. */
  answered(status: number | undefined, runtime: ServerRuntime): void {
    if (this.revival !== Revival.Candidate) return;
    if (status === undefined || status < 200 || status > 299) return;
    this.revival = Revival.Accepted;
    if (this.evidence !== undefined) this.decide(this.evidence, runtime);
  }

  /**
   * A resume of this transport concluded: the hydration had a log only if it replayed events of the session. A
   * replay of 0 events proves nothing restored (a store that vouches for any cursor replays nothing too): `empty`.
   */
  resumeConcluded(outcome: ServerResumeOutcome, ownEventsReplayed: number, runtime: ServerRuntime): void {
    if (outcome === 'failed' || outcome === 'probe_rejected') return;
    this.show(outcome === 'replayed' && ownEventsReplayed > 0 ? RESTORED : EMPTY, runtime);
  }

  /** A GET without a cursor: the client has nothing the hydration could restore. */
  freshGet(runtime: ServerRuntime): void {
    this.show(EMPTY, runtime);
  }

  /** The transport closed before the session showed anything restored. */
  closed(runtime: ServerRuntime): void {
    this.show(EMPTY, runtime);
  }

  private show(evidence: typeof RESTORED | typeof EMPTY, runtime: ServerRuntime): void {
    if (this.revival === Revival.Candidate) this.evidence ??= evidence;
    else if (this.revival === Revival.Accepted) this.decide(evidence, runtime);
  }

  private decide(evidence: typeof RESTORED | typeof EMPTY, runtime: ServerRuntime): void {
    this.revival = Revival.Decided;
    runtime.instruments.serverRevivedSessions.add(1, evidence);
  }

  /** A GET of the session: counted when the previous one was answered 200 and delivered nothing, just before. */
  getReceived(runtime: ServerRuntime): void {
    const now = nowMs();
    const previous = this.lastGetAt;
    if (previous !== undefined && this.lastGetServed && this.deliveredSinceGet === 0) {
      if (now - previous < EMPTY_STREAM_WINDOW_MS) runtime.instruments.serverEmptyRepeatGets.add(1, TRANSPORT_ATTRS);
    }
    this.lastGetAt = now;
    this.lastGetServed = false;
    this.deliveredSinceGet = 0;
  }

  /** The answer to the latest GET. */
  getAnswered(status: number | undefined): void {
    this.lastGetServed = status === 200;
  }

  /** Events reached a GET stream of the session (replayed, or written live on the standalone stream). */
  delivered(events: number): void {
    this.deliveredSinceGet += events;
  }
}
