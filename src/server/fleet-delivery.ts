/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The fleet's delivery marks (issue 49, `fleetDelivery`): this replica's side of the bookkeeping the shared store
 * keeps. The session observer tells it the events stored here while their stream had no connection here (pending),
 * the events a replay here sent (delivered), and what the session did here (core/fleet-delivery-rules.ts says which
 * of those claim the session's undelivered marks). A claim's count goes to
 * forkwatch_server_fleet_undelivered_events_total: the store removes each mark for one claimer only.
 *
 * A guest's manners: the app's store client is never awaited on the host's path; a call that throws or rejects is a
 * diagnostic (its events go uncounted, never counted twice); calls still outstanding are capped, so a stalled store
 * holds a bounded number of them (the rest are dropped, with one diagnostic).
 */
import { randomUUID } from 'node:crypto';
import { type FleetDeliveryTrigger, fleetClaimFor, requestClaimDue } from '../core/fleet-delivery-rules';
import type { ServerFleetUndeliveredReason, ServerTransportLabel } from '../shared/names';
import type { FleetDeliveryMarks } from '../shared/types';

export interface FleetDeliveryHost {
  /** Adds to forkwatch_server_fleet_undelivered_events_total. */
  countFleetUndelivered(transport: ServerTransportLabel, reason: ServerFleetUndeliveredReason, events: number): void;
  now(): number;
  onError(what: string, error: unknown): void;
}

/** Store calls outstanding at once; past it, marks are dropped (counted by no one) until the store answers. */
export const MAX_OUTSTANDING_MARK_CALLS = 1024;
/** Event ids one replay reports delivered; a longer replay reports its first ones (the rest may count as loss). */
export const MAX_DELIVERED_IDS_PER_REPLAY = 1024;

export class FleetDelivery {
  private outstanding = 0;
  private warnedFull = false;
  /** When this replica last claimed overdue marks of a session (per transport: one session). */
  private readonly lastRequestClaim = new WeakMap<object, number>();

  /**
   * With a log per replica, ids repeat across replicas (each numbers its own log) and a replay here sends only what
   * this process stored: marks are keyed by process. With a shared log, by the log's own ids.
   */
  private readonly keyPrefix: string;

  constructor(
    private readonly marks: FleetDeliveryMarks,
    private readonly windowMs: number,
    private readonly host: FleetDeliveryHost,
    private readonly transport: ServerTransportLabel = 'streamable_http',
    sharedLog = true,
  ) {
    this.keyPrefix = sharedLog ? '' : `${randomUUID()}/`;
  }

  /** An event of `sessionId` was stored here while its stream had no connection here. */
  pending(sessionId: unknown, eventId: unknown, standalone: boolean): void {
    if (!validSession(sessionId) || (typeof eventId !== 'string' && typeof eventId !== 'number')) return;
    const mark = { eventId: this.keyPrefix + String(eventId), storedAt: this.host.now(), standalone };
    this.call('marking an event pending', () => this.marks.pending(sessionId, [mark]));
  }

  /** A replay here sent these events of `sessionId`. */
  delivered(sessionId: unknown, eventIds: readonly string[]): void {
    if (!validSession(sessionId) || eventIds.length === 0) return;
    const ids = this.keyPrefix === '' ? eventIds : eventIds.map(id => this.keyPrefix + id);
    this.call('marking replayed events delivered', () => this.marks.delivered(sessionId, ids));
  }

  /** What the session did here: claims its undelivered marks as the rules say. */
  seen(session: object, sessionId: unknown, trigger: FleetDeliveryTrigger): void {
    if (!validSession(sessionId)) return;
    const now = this.host.now();
    if (trigger === 'request') {
      if (!requestClaimDue(this.lastRequestClaim.get(session), now, this.windowMs)) return;
      this.lastRequestClaim.set(session, now);
    }
    const claim = fleetClaimFor(trigger, now, this.windowMs);
    if (claim === undefined) return;
    const { reason, storedBefore, standaloneOnly } = claim;
    this.call(
      'claiming undelivered events',
      () => this.marks.claim(sessionId, { storedBefore, standaloneOnly }),
      claimed => {
        const events = typeof claimed === 'number' && Number.isFinite(claimed) ? Math.floor(claimed) : 0;
        if (events > 0) this.host.countFleetUndelivered(this.transport, reason, events);
      },
    );
  }

  private call(what: string, fn: () => unknown, onValue?: (value: unknown) => void): void {
    if (this.outstanding >= MAX_OUTSTANDING_MARK_CALLS) {
      if (!this.warnedFull) this.host.onError(what, new Error('too many delivery-mark calls outstanding; dropped'));
      this.warnedFull = true;
      return;
    }
    let result: unknown;
    try {
      result = fn();
    } catch (error) {
      this.host.onError(what, error);
      return;
    }
    this.outstanding++;
    Promise.resolve(result).then(
      value => {
        this.outstanding--;
        this.warnedFull = false;
        try {
          onValue?.(value);
        } catch (error) {
          this.host.onError(what, error);
        }
      },
      error => {
        this.outstanding--;
        this.host.onError(what, error);
      },
    );
  }
}

const validSession = (sessionId: unknown): sessionId is string =>
  typeof sessionId === 'string' && sessionId !== '' && sessionId.length <= 1024;
