/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Delivery as a fact of the fleet (issue 49): with a store every replica shares, the store itself keeps a mark for
 * each event a replica stored while its stream had no connection there ("pending"), and a replay on any replica
 * removes the marks of the events it sent ("delivered"). What is left are events no replica delivered. These rules
 * say, for what a replica sees of a session, which of the session's marks it claims as never delivered: a claim
 * removes the marks atomically in the store and returns how many it removed, so each event is counted by exactly
 * one replica and the sum over replicas counts it once.
 *
 * Pure: the first row whose trigger matches decides; a row without a reason claims nothing.
 * - A GET with Last-Event-ID is no proof: its replay may deliver the events (and removes their marks).
 * - A GET without Last-Event-ID opens a fresh standalone stream: no replay ever reaches back from it, so the
 *   standalone events stored before it and undelivered are lost for good (the SDK client's cursor-less reconnect
 *   after a resume without a frame, typescript-sdk #2499: a rolling restart stores nothing meanwhile and counts 0).
 * - A DELETE ends the session: whatever the fleet stored for it and never delivered can never arrive.
 * - Any other request proves the client alive: events stored more than a delivery window before it, and still not
 *   delivered by any replica, count (the window is the client's time to resume anywhere, as in delivery-rules.ts).
 * - A process closing its transports (a restart, a drain) says nothing: the session goes on elsewhere.
 * - A client that crashed sends nothing more: its marks expire in the store, counted by no one (not a fork).
 */

/** Mirrors SERVER_FLEET_UNDELIVERED_REASONS in names.ts (the core imports nothing from outside). */
export type FleetUndeliveredReason = 'session_deleted' | 'fresh_stream' | 'overdue';

/** What a replica saw of a session: a GET with or without Last-Event-ID, a DELETE, another request, a close(). */
export type FleetDeliveryTrigger = 'resume_get' | 'fresh_get' | 'delete' | 'request' | 'closed';

/** Which of the session's marks to claim: those stored before `storedBefore`, of standalone streams only or all. */
export interface FleetClaim {
  readonly reason: FleetUndeliveredReason;
  readonly storedBefore: number;
  readonly standaloneOnly: boolean;
}

export interface FleetDeliveryRule {
  readonly says: string;
  readonly trigger: FleetDeliveryTrigger;
  /** The reason the claimed events count with; undefined: nothing is claimed. */
  readonly reason: FleetUndeliveredReason | undefined;
  /** How far back the claim reaches: `now` or `now - windowMs`. */
  readonly before: 'now' | 'window';
  readonly standaloneOnly: boolean;
  /** Titles of the tests in test/core/fleet-delivery-rules.test.ts that pin this row. */
  readonly tests: readonly string[];
}

export const FLEET_DELIVERY_RULES: readonly FleetDeliveryRule[] = [
  {
    says: 'a resume is no proof of loss: its replay may deliver the events, and removes their marks',
    trigger: 'resume_get',
    reason: undefined,
    before: 'now',
    standaloneOnly: true,
    tests: ['a resume claims nothing'],
  },
  {
    says: 'a new standalone stream without Last-Event-ID: no replay reaches back from it to the standalone events before it',
    trigger: 'fresh_get',
    reason: 'fresh_stream',
    before: 'now',
    standaloneOnly: true,
    tests: ['a cursor-less GET claims the standalone events stored before it'],
  },
  {
    says: 'the client deleted the session: what was stored for it and never delivered can never arrive',
    trigger: 'delete',
    reason: 'session_deleted',
    before: 'now',
    standaloneOnly: false,
    tests: ['a DELETE claims every undelivered event of the session'],
  },
  {
    says: 'the client is alive a window after the events were stored, and no replica delivered them',
    trigger: 'request',
    reason: 'overdue',
    before: 'window',
    standaloneOnly: false,
    tests: [
      'a request claims only the events stored a window before it',
      'requests claim at most every quarter window',
    ],
  },
  {
    says: 'a process closing its transports (restart, drain) proves nothing: the session goes on on another replica',
    trigger: 'closed',
    reason: undefined,
    before: 'now',
    standaloneOnly: true,
    tests: ['a close() claims nothing'],
  },
];

/** The claim a trigger makes at `now`, or undefined when it claims nothing. */
export function fleetClaimFor(trigger: FleetDeliveryTrigger, now: number, windowMs: number): FleetClaim | undefined {
  for (const rule of FLEET_DELIVERY_RULES) {
    if (rule.trigger !== trigger) continue;
    if (rule.reason === undefined) return undefined;
    return {
      reason: rule.reason,
      storedBefore: rule.before === 'now' ? now : now - windowMs,
      standaloneOnly: rule.standaloneOnly,
    };
  }
  return undefined;
}

/**
 * A `request` claim costs the store a round trip: one replica makes one per session at most every quarter window
 * (a claim is never later than that past its due time). The other triggers are rare and always claim.
 */
export function requestClaimDue(lastClaimAt: number | undefined, now: number, windowMs: number): boolean {
  return lastClaimAt === undefined || now - lastClaimAt >= Math.max(20, windowMs / 4);
}
