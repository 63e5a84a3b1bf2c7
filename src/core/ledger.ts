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

/** The ring a session starts with: a short session's ids fit in it (one tool call with a few notifications). */
const FIRST_RING = 16;

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
  private ring: number[];
  private readonly capacity: number;
  private ringSize = 0;
  private ringNext = 0;

  constructor(
    readonly key: string,
    capacity: number,
    now: number,
  ) {
    this.capacity = Math.max(1, capacity);
    // A plain array of doubles: 8 bytes per hash like a Float64Array, without the ~190 bytes of ArrayBuffer and
    // typed-array objects that one costs per session. Filled with a non-integer, so it holds doubles from the start.
    // Small at first, grown once to its capacity when full: most sessions are short and consume a few ids, and the
    // ledger keeps each session for as long as it may be resumed (issue 50).
    this.ring = new Array<number>(Math.min(this.capacity, FIRST_RING)).fill(0.5);
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
    this.lastConsumedId = detached(id);
    this.lastActiveAt = now;
    if (this.hasHash(hash)) return true;
    // Until the ring wraps, ids are written in order, so a full small ring grows with its ids where they are.
    if (this.ringNext === this.ring.length && this.ringNext < this.capacity) this.grow();
    const ring = this.ring;
    ring[this.ringNext] = hash;
    // A compare instead of a modulo: the ring is written once per frame.
    const next = this.ringNext + 1;
    this.ringNext = next === this.capacity ? 0 : next;
    if (this.ringSize < this.capacity) this.ringSize++;
    return false;
  }

  private grow(): void {
    const ring = new Array<number>(this.capacity).fill(0.5);
    for (let i = 0; i < this.ringSize; i++) ring[i] = this.ring[i]!;
    this.ring = ring;
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

/**
 * The id's text on its own. An id the SSE parser cut from the stream's text is a slice that holds the whole chunk it
 * came from (1.5 KB for an SDK tool call's), and the ledger keeps a session's last id for as long as it keeps the
 * session (30 minutes by default): a short session kept 2 KB of the host's heap alive, marked by every major GC
 * (issue 50). Prefixing a character makes V8 copy the text into a new string, and slicing that holds only the copy.
 * Short ids are copied by V8 whenever they are cut.
 */
function detached(id: string): string {
  return id.length < 13 ? id : ` ${id}`.slice(1);
}

export class SessionLedger {
  readonly limits: LedgerLimits;
  /** Map order is placement order: a session active since its placement moves to the end when a sweep reaches it. */
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
   * The record of a session, created if needed, and marked active now. Called once per stream or resume, not per
   * frame. A known session's place in the recency order is refreshed lazily, as a frame's activity is (see evict):
   * a map delete and set per stream cost every short session more than the order is worth (issue 50).
   */
  touch(key: string, now: number): SessionRecord {
    const known = this.sessions.get(key);
    if (known !== undefined) {
      if (now > known.lastActiveAt) known.lastActiveAt = now;
      return known;
    }
    this.evict(now, 1);
    const record = new SessionRecord(key, this.limits.recentIds, now);
    this.sessions.set(key, record);
    return record;
  }

  forget(key: string): void {
    this.sessions.delete(key);
  }

  clear(): void {
    this.sessions.clear();
  }

  /**
   * Drops idle sessions and sessions over the count limit (leaving `room` for sessions about to be added), oldest
   * first. Activity (a frame, a touch) updates a session without reordering the map, so a session active since it
   * was placed gets a second chance: it moves to the young end instead of being evicted, and the sweep goes on past
   * it (each session moves at most once per sweep: its place then matches its activity).
   */
  evict(now: number, room = 0): void {
    for (const [key, record] of this.sessions) {
      if (now - record.lastActiveAt > this.limits.maxIdleMs) {
        this.sessions.delete(key);
        continue;
      }
      if (record.lastActiveAt > record.placedAt) {
        this.sessions.delete(key);
        record.placedAt = record.lastActiveAt;
        this.sessions.set(key, record);
        continue;
      }
      if (this.sessions.size + room <= this.limits.maxSessions) break;
      this.sessions.delete(key);
    }
  }
}
