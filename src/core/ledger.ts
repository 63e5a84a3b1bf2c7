/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The per-session ledger: what a session has consumed, across all its streams and connections.
 *
 * Bounded three ways: at most `maxSessions` sessions (least recently active evicted first), sessions idle for
 * `maxIdleMs` are dropped, and each session remembers only its last `recentIds` ids (a fixed ring of hashes).
 * Per frame the work is one hash and a bounded ring scan, with no allocation.
 */
import { positiveWhole } from './numbers';
import { hashEventId } from './event-id';
import { DEFAULT_LEDGER_LIMITS, type LedgerLimits } from './defaults';
import type { SequenceDensity } from './density';

export { DEFAULT_LEDGER_LIMITS, type LedgerLimits };

export class SessionRecord {
  /** The last id consumed on any stream of the session. */
  lastConsumedId: string | undefined = undefined;
  /** When (monotonic ms) a stream of the session was last lost; cleared by the next verdict. */
  lostAt: number | undefined = undefined;
  /** When (monotonic ms) the session last did anything. */
  lastActiveAt: number;
  /** lastActiveAt when the record was last moved to the young end of the ledger's recency order. */
  placedAt: number;
  /** Resume attempts made for this session. */
  resumeAttempts = 0;
  /** What the session's live streams showed of its id numbering: skipped events are counted only when `dense`. */
  density: SequenceDensity = 'unseen';
  private readonly ring: number[];
  private ringSize = 0;
  private ringNext = 0;

  constructor(
    readonly key: string,
    capacity: number,
    now: number,
  ) {
    // A plain array of doubles: 8 bytes per hash like a Float64Array, without the ~190 bytes of ArrayBuffer and
    // typed-array objects that one costs per session. Filled with a non-integer, so it holds doubles from the start.
    this.ring = new Array<number>(Math.max(1, capacity)).fill(0.5);
    this.lastActiveAt = now;
    this.placedAt = now;
  }

  /** True when `id` is among the ids recently consumed in this session. */
  hasConsumed(id: string): boolean {
    return this.hasHash(hashEventId(id));
  }

  /**
   * Records a consumed id and tells whether it had been consumed before (a duplicate delivery).
   * A duplicate is not added twice, so a replayed burst cannot flush the ring.
   */
  consume(id: string, now: number): boolean {
    const hash = hashEventId(id);
    this.lastConsumedId = id;
    this.lastActiveAt = now;
    if (this.hasHash(hash)) return true;
    const ring = this.ring;
    ring[this.ringNext] = hash;
    // A compare instead of a modulo: the ring is written once per frame.
    const next = this.ringNext + 1;
    this.ringNext = next === ring.length ? 0 : next;
    if (this.ringSize < ring.length) this.ringSize++;
    return false;
  }

  private hasHash(hash: number): boolean {
    const ring = this.ring;
    const n = this.ringSize;
    let i = 0;
    // Four compares per step: a frame that is not a duplicate (nearly all) scans the whole ring.
    for (; i + 3 < n; i += 4) {
      if (ring[i] === hash || ring[i + 1] === hash || ring[i + 2] === hash || ring[i + 3] === hash) return true;
    }
    for (; i < n; i++) if (ring[i] === hash) return true;
    return false;
  }
}

export class SessionLedger {
  readonly limits: LedgerLimits;
  /** Map order is recency order: a session is moved to the end when it is touched. */
  private readonly sessions = new Map<string, SessionRecord>();

  constructor(limits: Partial<LedgerLimits> = {}) {
    this.limits = {
      maxSessions: positiveWhole(limits.maxSessions) ?? DEFAULT_LEDGER_LIMITS.maxSessions,
      maxIdleMs: positiveWhole(limits.maxIdleMs) ?? DEFAULT_LEDGER_LIMITS.maxIdleMs,
      recentIds: positiveWhole(limits.recentIds) ?? DEFAULT_LEDGER_LIMITS.recentIds,
    };
  }

  get size(): number {
    return this.sessions.size;
  }

  /** The record of a session, if it is still tracked. Does not change recency. */
  peek(key: string): SessionRecord | undefined {
    return this.sessions.get(key);
  }

  /**
   * The record of a session, created if needed, and marked most recent. Called once per stream or resume,
   * not per frame, so the recency bookkeeping stays off the hot path.
   */
  touch(key: string, now: number): SessionRecord {
    let record = this.sessions.get(key);
    if (record !== undefined) {
      this.sessions.delete(key);
    } else {
      record = new SessionRecord(key, this.limits.recentIds, now);
    }
    record.lastActiveAt = now;
    record.placedAt = now;
    this.sessions.set(key, record);
    this.evict(now);
    return record;
  }

  forget(key: string): void {
    this.sessions.delete(key);
  }

  clear(): void {
    this.sessions.clear();
  }

  /**
   * Drops idle sessions and sessions over the count limit, oldest first. Frames update a session's activity
   * without reordering the map (that would cost a delete and a set per frame), so a session that was active
   * since it was placed gets a second chance: it moves to the young end instead of being evicted.
   */
  evict(now: number): void {
    for (const [key, record] of this.sessions) {
      const idle = now - record.lastActiveAt > this.limits.maxIdleMs;
      if (idle) {
        this.sessions.delete(key);
        continue;
      }
      if (this.sessions.size <= this.limits.maxSessions) break;
      this.sessions.delete(key);
      if (record.lastActiveAt > record.placedAt) {
        record.placedAt = record.lastActiveAt;
        this.sessions.set(key, record);
      }
    }
  }
}
