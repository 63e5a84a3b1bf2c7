/**
 * What this process knows about replays that cross a boundary (the judgement is src/core/replay-boundary.ts):
 *
 * - which event store objects several sessions (transports) use: such a store cannot keep their streams apart, the
 *   EventStore interface carries no session. Learned when a second transport's store is wrapped.
 * - for those stores only, which session stored each recent event (a fixed table: no allocation per event), so a
 *   replay to session A that sends an event stored here for session B is proven cross-session;
 * - per session, the request streams whose response was written live here (a small ring).
 *
 * Nothing here is per event unless the store is shared, except one response check on request-stream events written
 * live. Sessions are held weakly.
 */
import { CompletedStreams, EventOwnerTable, hashEventId } from '../core';

/** One session (transport) as an owner of stored events. */
export interface EventOwner {
  readonly n: number;
  readonly transport: WeakRef<object>;
}

/** A store object, and whether more than one session uses it. */
export interface StoreShare {
  first: WeakRef<object> | undefined;
  shared: boolean;
}

/** Owners remembered by number, for naming the other session of a cross-session replay. */
const MAX_OWNERS = 10_000;

export class ReplayBoundaryWatch {
  private readonly table = new EventOwnerTable();
  private readonly shares = new WeakMap<object, StoreShare>();
  private readonly owners = new WeakMap<object, EventOwner>();
  private readonly byNumber = new Map<number, EventOwner>();
  private readonly completed = new WeakMap<object, CompletedStreams>();
  private nextOwner = 1;

  /** The share of `store` as seen by `transport`, which is about to use it (once per transport). */
  shareOf(store: object, transport: object): StoreShare {
    let share = this.shares.get(store);
    if (share === undefined) {
      share = { first: new WeakRef(transport), shared: false };
      this.shares.set(store, share);
    } else if (share.first?.deref() !== transport) {
      share.shared = true;
    }
    return share;
  }

  /** The transport stored the event with this id in a shared store (its store resolved). */
  stored(transport: object, eventId: unknown): void {
    if (typeof eventId === 'string') this.table.record(hashEventId(eventId), this.ownerOf(transport).n);
  }

  /** The owner of a replayed event when this process stored it for another session than `transport`'s. */
  foreignOwner(transport: object, eventId: unknown): EventOwner | undefined {
    if (typeof eventId !== 'string') return undefined;
    const n = this.table.ownerOf(hashEventId(eventId));
    if (n === 0 || n === this.owners.get(transport)?.n) return undefined;
    return this.byNumber.get(n) ?? { n, transport: new WeakRef({}) };
  }

  /** A response was written live on a request stream of the session: that stream is complete. */
  responseWritten(transport: object, streamId: string): void {
    let streams = this.completed.get(transport);
    if (streams === undefined) {
      streams = new CompletedStreams();
      this.completed.set(transport, streams);
    }
    streams.add(streamId);
  }

  completedHere(transport: object, streamId: unknown): boolean {
    return typeof streamId === 'string' && this.completed.get(transport)?.has(streamId) === true;
  }

  clear(): void {
    this.table.clear();
    this.byNumber.clear();
  }

  private ownerOf(transport: object): EventOwner {
    let owner = this.owners.get(transport);
    if (owner === undefined) {
      owner = { n: this.nextOwner++, transport: new WeakRef(transport) };
      // Wraps after 2^31 sessions: the table holds Int32 owners; 0 means none.
      if (this.nextOwner > 0x7fffffff) this.nextOwner = 1;
      this.owners.set(transport, owner);
      this.byNumber.set(owner.n, owner);
      if (this.byNumber.size > MAX_OWNERS) this.byNumber.delete(this.byNumber.keys().next().value!);
    }
    return owner;
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
