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
 * live. What it knows of a transport is in one record its party holds (no map of transports); session ids only in a
 * bounded map, for naming the other session on a span.
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
 * What the watch knows of one transport: a number of its own (a store's first user is told apart without a WeakRef),
 * the request streams completed live on it, and the owner number of its session. Held by the transport's party, not
 * in a weak map of the watch's: an entry per session in a weak map is an ephemeron every garbage collection traces, a
 * cost short sessions pay in full (issue 50).
 */
export interface TransportRecord {
  /** The watch it belongs to: a re-patched instrumentation has a new watch, which starts its records afresh. */
  readonly watch: ReplayBoundaryWatch;
  readonly n: number;
  completed: CompletedStreams | undefined;
  sessionId: string | undefined;
  owner: number;
}

/** What stands for one transport here (its session observer, or its store's wrapper): it holds the record. */
export interface BoundaryParty {
  readonly transport: object;
  boundaryRecord: TransportRecord | undefined;
}

export class ReplayBoundaryWatch {
  private readonly table = new EventOwnerTable();
  private readonly shares = new WeakMap<object, StoreShare>();
  private transportsSeen = 0;
  private readonly names = new Map<number, string>();

  /** The share of `store` as seen by the party's transport, which is about to use it (once per transport). */
  shareOf(store: object, party: BoundaryParty): StoreShare {
    const { n } = this.recordOf(party);
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
  stored(party: BoundaryParty, eventId: unknown): void {
    if (typeof eventId !== 'string') return;
    const n = this.ownerOf(party);
    if (n !== 0) this.table.record(hashEventId(eventId), n);
  }

  /** The owner of a replayed event when this process stored it for another session than the party's. */
  foreignOwner(party: BoundaryParty, eventId: unknown): EventOwner | undefined {
    if (typeof eventId !== 'string') return undefined;
    const n = this.table.ownerOf(hashEventId(eventId));
    if (n === 0 || n === this.ownerOf(party)) return undefined;
    return { n, sessionId: this.names.get(n) };
  }

  /** A response was written live on a request stream of the session: that stream is complete. */
  responseWritten(party: BoundaryParty, streamId: string): void {
    const record = this.recordOf(party);
    record.completed ??= new CompletedStreams();
    record.completed.add(streamId);
  }

  completedHere(party: BoundaryParty, streamId: unknown): boolean {
    const record = party.boundaryRecord;
    return typeof streamId === 'string' && record?.watch === this && record.completed?.has(streamId) === true;
  }

  clear(): void {
    this.table.clear();
    this.names.clear();
  }

  /** The owner number of the party's session, 0 while it has none (before initialize, stateless). */
  private ownerOf(party: BoundaryParty): number {
    const sessionId = (party.transport as { sessionId?: unknown }).sessionId;
    if (typeof sessionId !== 'string' || sessionId === '') return 0;
    const record = this.recordOf(party);
    if (record.sessionId !== sessionId) {
      record.sessionId = sessionId;
      record.owner = ownerNumber(sessionId);
      this.names.delete(record.owner);
      this.names.set(record.owner, sessionId);
      if (this.names.size > MAX_NAMES) this.names.delete(this.names.keys().next().value!);
    }
    return record.owner;
  }

  private recordOf(party: BoundaryParty): TransportRecord {
    let record = party.boundaryRecord;
    if (record === undefined || record.watch !== this) {
      record = { watch: this, n: ++this.transportsSeen, completed: undefined, sessionId: undefined, owner: 0 };
      party.boundaryRecord = record;
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
