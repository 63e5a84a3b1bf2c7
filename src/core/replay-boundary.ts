/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Replays that cross a boundary, judged on the server that serves the resume (pure: no I/O, no clocks).
 *
 * - **Another session's events.** The SDK stores the standalone stream of every session under one stream id
 *   (`_GET_stream`, typescript-sdk #1004) and the EventStore interface carries no session, so a store object shared
 *   by several sessions cannot keep them apart: a correct cursor lookup replays every later `_GET_stream` event,
 *   other sessions' included. The proof is an event replayed to session A that this process stored for session B.
 *   `EventOwnerTable` remembers who stored recent events, only for stores seen shared by two sessions (lazy), in a
 *   fixed table (bounded, no allocation per event).
 * - **Another stream's events after colliding ids.** A resume whose cursor the store resolves, here, to a request
 *   stream whose response was written live is the resume of a stream the client had finished: the SDK client never
 *   resumes a request stream once it has the response, and one that missed the response in a cut would have had it
 *   stored here with no connection. The cursor came from another log whose ids collide with this one (per-replica
 *   counters): the events of the stream the client really waits for are lost elsewhere.
 */

/** Resume outcomes of a replay that crossed a boundary (mirrors part of SERVER_RESUME_OUTCOMES in names.ts). */
export type BoundaryOutcome = 'cross_session' | 'completed_stream';

/** Slots of the owner table: 4096 recent events stored in shared stores on this process (48 KiB once allocated). */
export const EVENT_OWNER_SLOTS = 4096;

/**
 * Event-id hash -> owner number (a session on this process), direct-mapped: a later event in the same slot replaces
 * the earlier one. A lookup that finds another id's hash in the slot is a miss, never a wrong owner (53-bit hashes),
 * so forgetting costs recall, never a false page.
 */
export class EventOwnerTable {
  private hashes: Float64Array | undefined = undefined;
  private owners: Int32Array | undefined = undefined;
  private readonly mask: number;

  constructor(slots = EVENT_OWNER_SLOTS) {
    let size = 1;
    while (size < Math.max(1, Math.min(slots, 1 << 20))) size <<= 1;
    this.mask = size - 1;
  }

  /** Whether anything was ever recorded (the table is allocated on first use). */
  get allocated(): boolean {
    return this.hashes !== undefined;
  }

  /** Records that `owner` (> 0) stored the event with this id hash. */
  record(hash: number, owner: number): void {
    if (this.hashes === undefined) {
      this.hashes = new Float64Array(this.mask + 1);
      this.owners = new Int32Array(this.mask + 1);
    }
    const slot = (hash >>> 0) & this.mask;
    this.hashes[slot] = hash;
    this.owners![slot] = owner;
  }

  /** The owner that stored the event with this id hash here, or 0 when unknown. */
  ownerOf(hash: number): number {
    if (this.hashes === undefined) return 0;
    const slot = (hash >>> 0) & this.mask;
    return this.hashes[slot] === hash ? this.owners![slot]! : 0;
  }

  clear(): void {
    this.hashes = undefined;
    this.owners = undefined;
  }
}

/** Request streams of one session whose response was written live here, the most recent `capacity` of them. */
export class CompletedStreams {
  /** Grows to `capacity`, then is a ring: most sessions complete one or two streams (issue 50: no 16 slots each). */
  private readonly ids: string[] = [];
  private next = 0;
  private readonly capacity: number;

  constructor(capacity = 16) {
    this.capacity = Math.max(1, capacity);
  }

  add(streamId: string): void {
    if (this.has(streamId)) return;
    if (this.ids.length < this.capacity) {
      this.ids.push(streamId);
      return;
    }
    this.ids[this.next] = streamId;
    this.next = (this.next + 1) % this.capacity;
  }

  has(streamId: string): boolean {
    return this.ids.includes(streamId);
  }
}

export interface BoundaryInput {
  /** The stream the store resolved the cursor to ('' or undefined: it did not). */
  streamId: unknown;
  /** The session's standalone stream id on this transport (`_GET_stream` in the SDK). */
  standaloneStreamId: string;
  /** Events the replay sent that this process stored for another session. */
  foreignEvents: number;
  /** The resolved stream is a request stream of this session whose response was written live here. */
  streamCompletedHere: boolean;
  /** A request of the resolved stream is still in flight here (the client may be waiting on it). */
  streamInFlight: boolean;
}

/**
 * The boundary a 2xx replay crossed, or undefined when it stayed inside the session's stream. Another session's
 * events come first: a data leak, whatever else happened.
 */
export function judgeReplayBoundary(input: BoundaryInput): BoundaryOutcome | undefined {
  if (input.foreignEvents > 0) return 'cross_session';
  const { streamId } = input;
  if (typeof streamId !== 'string' || streamId === '' || streamId === input.standaloneStreamId) return undefined;
  if (input.streamCompletedHere && !input.streamInFlight) return 'completed_stream';
  return undefined;
}

/** A JSON-RPC response (it has an id and a result or an error): the last event of a request's stream. */
export function isJsonRpcResponse(message: unknown): boolean {
  return (
    message !== null &&
    typeof message === 'object' &&
    'id' in message &&
    ('result' in message || 'error' in message) &&
    !('method' in message)
  );
}

/**
 * The client's requests still waiting for a response (JSON-RPC ids), for one client transport: a response to any
 * other id answers a request this client never sent or already got an answer to. It came from another stream's or
 * another session's log (a replay after colliding ids): foreign. Bounded: once more than `capacity` requests were
 * outstanding at a time, unknown ids are no longer judged, since one of the forgotten ones may be answered late.
 */
export class OutstandingRequests {
  private readonly ids = new Set<string | number>();
  private forgot = false;
  /**
   * The last RECENTLY_ANSWERED requests answered: what a reconnect of a request's stream is checked against. Grows to
   * that many, then is a ring (a short session answers a few: no 16 slots each).
   */
  private readonly recent: (string | number)[] = [];
  private recentNext = 0;

  constructor(private readonly capacity = 1024) {}

  sent(id: unknown): void {
    if (typeof id !== 'string' && typeof id !== 'number') return;
    this.ids.add(id);
    if (this.ids.size > this.capacity) {
      this.ids.delete(this.ids.values().next().value!);
      this.forgot = true;
    }
  }

  /** A response arrived: true when it is foreign (no request of this client waits for its id). */
  answered(id: unknown): boolean {
    if (typeof id !== 'string' && typeof id !== 'number') return false;
    if (this.ids.delete(id)) {
      if (this.recent.length < RECENTLY_ANSWERED) this.recent.push(id);
      else {
        this.recent[this.recentNext] = id;
        this.recentNext = (this.recentNext + 1) % RECENTLY_ANSWERED;
      }
      return false;
    }
    return !this.forgot;
  }

  /** True when the request `id` was answered recently (an error response answers it too). */
  wasAnswered(id: unknown): boolean {
    return (typeof id === 'string' || typeof id === 'number') && this.recent.includes(id);
  }
}

/** How many answered requests a client transport remembers: the SDK reconnects a stream within seconds of its end. */
const RECENTLY_ANSWERED = 16;
