/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The standalone (GET) streams of the sessions one tmcp `HttpTransport` serves, and the notifications it broadcast to
 * them: the delivery facts of each session (server/stack.ts), for the delivery ledger.
 *
 * tmcp writes a broadcast (list changes; `server.changed(...)`) to the GET streams open at that moment through its
 * stream session manager, and to nobody else: it keeps no event store, and a resume gets a fresh stream. So a
 * broadcast made while a session's stream is down is gone. Its writes are private, but what decides them is not: the
 * broadcast is an event of the server any listener sees (construction.ts subscribes one, after the transport's own,
 * so tmcp has written it when this runs), and whether a session's stream is open here is what the transport answered
 * its GET (200) until the client's connection dropped (the request's signal) or the session was deleted. Each
 * broadcast is handed to the ledger once per session that has listened here, as written live or as had nowhere to go
 * (not replayable: `dropped` once the session shows it is alive after the delivery window).
 *
 * Sessions that never opened a stream here are not recorded: a broadcast promises them nothing. Neither are a
 * resource update (tmcp sends it to the subscribed sessions, a list it keeps private) nor a broadcast only for
 * per-request subscriptions. A broadcast written in the instant between a cut and its notice counts as delivered,
 * as for the SDK's transport without an event store.
 *
 * Memory: one small record per session that listened here, at most MAX_HELD_SESSION_IDS (the oldest forgotten
 * first, as a closed session); each id bounded in bytes as held-sessions.ts holds them. Nothing per broadcast.
 */
import { MAX_HELD_SESSION_IDS, MAX_HELD_SESSION_ID_CHARS } from '../../../core/defaults';
import { boundedKey } from '../../../core/per-request';
import type { WebRequestLike } from '../../../shared/internal-types';
import type { ServerTransportLabel } from '../../../shared/names';
import type { ServerRuntime } from '../../server-runtime';
import { LedgerSessionFacts, storedEventOf } from '../../session-facts';
import { onWebClientDrop } from '../../web-request';

/** tmcp names no streams: the ledger's name for a session's one standalone stream. */
const STANDALONE = '_GET_stream';
const TRANSPORT_ATTRS: { transport: ServerTransportLabel } = { transport: 'streamable_http' };
const WRITTEN = storedEventOf(true, false, true);
const NOWHERE = storedEventOf(false, false, true);

/** What tmcp's McpServer hands a `broadcast` listener. */
export interface BroadcastDetail {
  request?: { method?: unknown };
  /** Only for the per-request subscriptions (protocol 2026-07-28), not written to the GET streams. */
  subscriptionOnly?: unknown;
}

/** A session that opened its standalone stream here. */
class ListeningSession {
  /** The GET connection that carries its stream now; undefined while it is down. */
  connection: object | undefined = undefined;
  readonly facts: LedgerSessionFacts;
  constructor(owner: { readonly runtime: ServerRuntime }) {
    this.facts = new LedgerSessionFacts(owner, this);
  }
}

export class StandaloneStreams {
  /** By bounded session id; insertion order is age. */
  private readonly sessions = new Map<string, ListeningSession>();

  constructor(
    /** The transport's observer: the runtime its patch last bound. */
    private readonly owner: { readonly runtime: ServerRuntime },
    private readonly limit = MAX_HELD_SESSION_IDS,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** A request of the session other than a GET, before the transport handles it. */
  requestReceived(sessionId: string): void {
    this.sessions.get(keyOf(sessionId))?.facts.requestReceived();
  }

  /** A GET of a session that listened here before, before the transport handles it. */
  getReceived(sessionId: string): void {
    this.sessions.get(keyOf(sessionId))?.facts.getReceived();
  }

  /** The transport answered the session's GET 200: its stream is open here until the client drops `request`. */
  streamOpened(sessionId: string, request: WebRequestLike | undefined): void {
    const key = keyOf(sessionId);
    let session = this.sessions.get(key);
    if (session === undefined) {
      session = this.listening(key);
      session.facts.getReceived();
    }
    const connection = {};
    session.connection = connection;
    const opened = session;
    onWebClientDrop(request, () => {
      if (opened.connection !== connection) return;
      opened.connection = undefined;
      opened.facts.standaloneDropped(STANDALONE, 0);
    });
  }

  /** The transport answered the session's DELETE: it ended here. */
  deleted(sessionId: string): void {
    const key = keyOf(sessionId);
    const session = this.sessions.get(key);
    if (session === undefined) return;
    this.sessions.delete(key);
    session.connection = undefined;
    session.facts.closed();
  }

  /** tmcp broadcast a notification: written to each open stream here, to nowhere for the other listening sessions. */
  broadcast(detail: BroadcastDetail | undefined): void {
    if (detail?.subscriptionOnly || detail?.request?.method === 'notifications/resources/updated') return;
    const { serverEvents } = this.owner.runtime.instruments;
    for (const session of this.sessions.values()) {
      serverEvents.add(1, TRANSPORT_ATTRS);
      session.facts.eventSent(STANDALONE, session.connection === undefined ? NOWHERE : WRITTEN);
    }
  }

  private listening(key: string): ListeningSession {
    if (this.sessions.size >= this.limit) {
      for (const [oldestKey, oldest] of this.sessions) {
        this.sessions.delete(oldestKey);
        oldest.facts.closed();
        break;
      }
    }
    const session = new ListeningSession(this.owner);
    this.sessions.set(key, session);
    return session;
  }
}

const keyOf = (id: string) => boundedKey(id, MAX_HELD_SESSION_ID_CHARS);
