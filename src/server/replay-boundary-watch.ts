/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What this process knows about replays that cross a boundary (the judgement is src/core/replay-boundary.ts):
 *
 * - which event store objects several transports use: such a store cannot keep their sessions apart, the
 *   EventStore interface carries no session. Learned when a second transport's store is wrapped.
 * - for those stores only, which session stored each recent event (a fixed table: no allocation per event), so a
 *   replay to session A that sends an event stored here for session B is proven cross-session. Owners are sessions,
 *   not transports: a session served by a new transport on the same process (re-hydrated) still owns its events.
 * - per session, the request streams whose response was written live here (a small ring).
 *
 * Nothing here is per event unless the store is shared, except one response check on request-stream events written
 * live. Transports are held weakly, in one record each; session ids only in a bounded map, for naming the other
 * session on a span.
 */
import { hashEventId } from '../core/event-id';
import { CompletedStreams, EventOwnerTable } from '../core/replay-boundary';

/** The session that stored a replayed event, as far as this process knows it. */
export interface EventOwner {
  readonly n: number;
  /** Undefined when the bounded map of names forgot it (the owner is still known to be another session). */
  readonly sessionId: string | undefined;
}

/** A store object, and whether more than one transport uses it. */
export interface StoreShare {
  /** The number of the first transport that used it (see TransportRecord). */
  readonly first: number;
  shared: boolean;
}

/** Session ids remembered by owner number, for naming the other session of a cross-session replay. */
const MAX_NAMES = 10_000;

/**
 * An owner number from the session id alone (1 … 2^31 − 1): the same session always gets the same number, so a
 * forgotten name never turns a session's own events into another's. Two sessions with the same number (a 31-bit
 * collision) hide a leak between them, never raise a false one.
 */
function ownerNumber(sessionId: string): number {
  return (hashEventId(sessionId) % 0x7ffffffe) + 1;
}

/**
 * What the watch knows of one transport, in one weakly held record (one map entry per session, not one per fact):
 * a number of its own (a store's first user is told apart without a WeakRef), the request streams completed live on
 * it, and the owner number of its session.
 */
interface TransportRecord {
  readonly n: number;
  completed: CompletedStreams | undefined;
  sessionId: string | undefined;
  owner: number;
}

export class ReplayBoundaryWatch {
  private readonly table = new EventOwnerTable();
  private readonly shares = new WeakMap<object, StoreShare>();
  private readonly transports = new WeakMap<object, TransportRecord>();
  private transportsSeen = 0;
  private readonly names = new Map<number, string>();

  /** The share of `store` as seen by `transport`, which is about to use it (once per transport). */
  shareOf(store: object, transport: object): StoreShare {
    const { n } = this.recordOf(transport);
    let share = this.shares.get(store);
    if (share === undefined) {
      share = { first: n, shared: false };
      this.shares.set(store, share);
    } else if (share.first !== n) {
      share.shared = true;
    }
    return share;
  }

  /** The transport stored the event with this id in a shared store (its store resolved). */
  stored(transport: object, eventId: unknown): void {
    if (typeof eventId !== 'string') return;
    const n = this.ownerOf(transport);
    if (n !== 0) this.table.record(hashEventId(eventId), n);
  }

  /** The owner of a replayed event when this process stored it for another session than `transport`'s. */
  foreignOwner(transport: object, eventId: unknown): EventOwner | undefined {
    if (typeof eventId !== 'string') return undefined;
    const n = this.table.ownerOf(hashEventId(eventId));
    if (n === 0 || n === this.ownerOf(transport)) return undefined;
    return { n, sessionId: this.names.get(n) };
  }

  /** A response was written live on a request stream of the session: that stream is complete. */
  responseWritten(transport: object, streamId: string): void {
    const record = this.recordOf(transport);
    record.completed ??= new CompletedStreams();
    record.completed.add(streamId);
  }

  completedHere(transport: object, streamId: unknown): boolean {
    return typeof streamId === 'string' && this.transports.get(transport)?.completed?.has(streamId) === true;
  }

  clear(): void {
    this.table.clear();
    this.names.clear();
  }

  /** The owner number of the transport's session, 0 while it has none (before initialize, stateless). */
  private ownerOf(transport: object): number {
    const sessionId = (transport as { sessionId?: unknown }).sessionId;
    if (typeof sessionId !== 'string' || sessionId === '') return 0;
    const record = this.recordOf(transport);
    if (record.sessionId !== sessionId) {
      record.sessionId = sessionId;
      record.owner = ownerNumber(sessionId);
      this.names.delete(record.owner);
      this.names.set(record.owner, sessionId);
      if (this.names.size > MAX_NAMES) this.names.delete(this.names.keys().next().value!);
    }
    return record.owner;
  }

  private recordOf(transport: object): TransportRecord {
    let record = this.transports.get(transport);
    if (record === undefined) {
      record = { n: ++this.transportsSeen, completed: undefined, sessionId: undefined, owner: 0 };
      this.transports.set(transport, record);
    }
    return record;
  }
}

/** One watch per instrumentation (its runtime), made on first use. */
const watches = new WeakMap<object, ReplayBoundaryWatch>();

export function boundaryWatchOf(runtime: object): ReplayBoundaryWatch {
  let watch = watches.get(runtime);
  if (watch === undefined) {
    watch = new ReplayBoundaryWatch();
    watches.set(runtime, watch);
  }
  return watch;
}
