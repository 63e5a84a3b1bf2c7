/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A recording wrapper around a server transport's EventStore, installed lazily per transport instance.
 *
 * The wrapper is an instance of one of two classes: with `storeEvent` and `replayEventsAfter`, and with
 * `getStreamIdForEventId` too when the store implements it, so the SDK's `if (this._eventStore.getStreamIdForEventId)`
 * takes the same branch. Each call goes to the store's own method with the store as `this` and the same arguments,
 * returning the very value the store returned. The one argument it replaces is the `{ send }` option of
 * `replayEventsAfter`, by a copy whose `send` counts its calls before calling the SDK's: the count is the exact
 * number of events replayed. The SDK uses nothing else of the store (every 1.x and 2.x version), and nothing else is
 * reachable through the wrapper.
 *
 * Why classes, and not `Object.create(store)` with own methods (as up to stop 31): every wrapper then had the store as
 * its prototype, so each session's wrapper had a hidden class of its own, and the SDK's `this._eventStore.storeEvent`
 * went megamorphic in a process with more than four sessions (issue 27). All wrappers of one class share one.
 *
 * What a call belongs to: the wrapper is one transport's, and the SDK hands the store the resume's Last-Event-ID
 * (`getStreamIdForEventId(lastEventId)`, `replayEventsAfter(lastEventId, { send })`). The GET handler opens a scope
 * per resume request with its cursor; a store call belongs to the oldest open scope of its transport with that cursor
 * whose step it has not seen, so concurrent resumes on one transport never mix their counts. Not an
 * AsyncLocalStorage: on Node 20 the first `run` of one turns on a promise hook for the whole process, for good
 * (about a tenth more server CPU per notification in the outside-in bench, once a server had served one resume).
 */
import type { EventStoreLike, StreamableHttpServerTransportLike } from '../../../shared/internal-types';
import type { BoundaryParty, ReplayBoundaryWatch, StoreShare } from '../../replay-boundary-watch';
import { MAX_REPLAYED_IDS, type ReplayRecord, type ReplayScope } from '../../replay-record';

/** The open scopes of each transport, oldest first; concluded ones are dropped as the list is next used. */
const openScopes = new WeakMap<object, ReplayScope[]>();

/** A resume request of `transport` begins: the store calls it makes from now on, with its cursor, are its own. */
export function openReplayScope(transport: object, scope: ReplayScope): void {
  const open = (openScopes.get(transport) ?? []).filter(s => s.record !== undefined);
  open.push(scope);
  openScopes.set(transport, open);
}

/** Scopes still open on a transport (tests: none may outlive its resume). */
export function openReplayScopes(transport: object): number {
  return (openScopes.get(transport) ?? []).filter(s => s.record !== undefined).length;
}

export interface RecordingHooks {
  /** False once the instrumentation is disabled or the transport class unpatched: the wrapper then steps aside. */
  active(transport: object): boolean;
  /** Who stored which events in shared stores (replays that cross a session boundary). */
  readonly boundary: ReplayBoundaryWatch;
  onError(what: string, error: unknown): void;
}

/**
 * What records the events of one transport (its session observer). The wrapper holds it, so neither the store call
 * nor the write that follows looks it up per event. It is the transport's party in the replay-boundary watch.
 */
export interface StoreRecorder extends BoundaryParty {
  /**
   * A storeEvent call went to the store (it returned; in the same turn). What it returns, if anything, is called
   * once the store resolved, before the SDK continues (one more event in the session's log, and the SDK now decides
   * where to write it). It must not throw: it runs as a promise reaction, where nobody would catch it. It receives
   * the event id the store returned. `share` says whether other sessions use the same store object.
   */
  eventStoring(streamId: unknown, message: unknown, share: StoreShare): ((eventId: unknown) => void) | undefined;
  /** writeSSEEvent(target, b, c, d) returned `result` on the transport (called by the patch, not by the wrapper). */
  liveEventWritten(target: unknown, b: unknown, c: unknown, d: unknown, result: unknown): void;
}

/** A store method called with the SDK's own arguments, whatever they are. */
type StoreMethod = (this: unknown, ...args: unknown[]) => unknown;

/** A hidden property of every wrapper (never of a store), holding its watch: read once per event. */
const RECORDING = Symbol('forkwatch.recordingEventStore');

function watchOf(store: unknown): StoreWatch | undefined {
  return typeof store === 'object' && store !== null ? (store as { [RECORDING]?: StoreWatch })[RECORDING] : undefined;
}

/** Whether a transport's store is already forkwatch's wrapper: the per-event check of `send`, without a lookup. */
export function isRecordingStore(store: unknown): boolean {
  return watchOf(store) !== undefined;
}

/** The recorder of `transport` if `store` is the recording wrapper made for it: one property read, no lookup. */
export function recorderOf(store: unknown, transport: object): StoreRecorder | undefined {
  const watch = watchOf(store);
  return watch !== undefined && watch.transport === transport ? watch.recorder : undefined;
}

/** Puts a recording wrapper in place of `transport._eventStore`, once; does nothing if there is no usable store. */
export function ensureRecordingStore(
  transport: StreamableHttpServerTransportLike,
  hooks: RecordingHooks,
  recorder: StoreRecorder,
): void {
  const store = transport._eventStore;
  if (!store || (typeof store !== 'object' && typeof store !== 'function') || watchOf(store) !== undefined) return;
  if (typeof store.storeEvent !== 'function' || typeof store.replayEventsAfter !== 'function') return;
  const watch = new StoreWatch(store, transport, hooks, hooks.boundary.shareOf(store, recorder), recorder);
  transport._eventStore =
    typeof store.getStreamIdForEventId === 'function'
      ? new RecordingEventStoreWithLookup(watch)
      : new RecordingEventStore(watch);
}

/** The store behind a wrapper (or the value itself): for tests and diagnostics. */
export function unwrapEventStore<T>(store: T): T {
  return (watchOf(store)?.original as T | undefined) ?? store;
}

/** One wrapped store: what its methods share. */
class StoreWatch {
  constructor(
    readonly original: EventStoreLike,
    readonly transport: StreamableHttpServerTransportLike,
    readonly hooks: RecordingHooks,
    readonly share: StoreShare,
    readonly recorder: StoreRecorder,
  ) {}

  /** Steps aside for good once forkwatch no longer instruments this transport: the field gets its store back. */
  live(wrapper: object): boolean {
    let on = false;
    try {
      on = this.hooks.active(this.transport);
      if (!on && this.transport._eventStore === wrapper) this.transport._eventStore = this.original;
    } catch {
      // a frozen transport keeps the wrapper, which then only delegates
    }
    return on;
  }

  /**
   * The resume request a store call with this cursor belongs to: the oldest open one that has not made this step yet,
   * else the newest with the cursor (a step made twice). Undefined for a call outside every resume.
   */
  recordOf(cursor: unknown, step: 'lookupCalled' | 'replayCalled'): ReplayRecord | undefined {
    const open = openScopes.get(this.transport);
    if (open === undefined) return undefined;
    let newest: ReplayRecord | undefined;
    for (const scope of open) {
      const record = scope.record;
      if (record === undefined || scope.cursor !== cursor) continue;
      if (!record[step]) return record;
      newest = record;
    }
    return newest;
  }
}

/** The wrapper of a store without `getStreamIdForEventId`. */
class RecordingEventStore implements EventStoreLike {
  readonly [RECORDING]: StoreWatch;

  constructor(watch: StoreWatch) {
    this[RECORDING] = watch;
  }

  /** Once per event. `arguments` passed straight to apply: no array per call. */
  storeEvent(streamId: unknown, message: unknown): unknown {
    const watch = this[RECORDING];
    const { original } = watch;
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    const result = (original.storeEvent as StoreMethod).apply(original, arguments as unknown as unknown[]);
    // Told after the call returned (a call that throws stored nothing), in the same turn: what the stream's
    // connection was at the call is still what it is. Most events need nothing more: their write records them.
    // The others get one reaction on the store's own promise, attached before the SDK's await so it runs first.
    if (watch.live(this)) {
      let onStored: ((eventId: unknown) => void) | undefined;
      try {
        onStored = watch.recorder.eventStoring(streamId, message, watch.share);
      } catch (error) {
        watch.hooks.onError('recording a stored event', error);
      }
      if (onStored) Promise.resolve(result).then(onStored, ignoreRejection);
    }
    return result;
  }

  /** `options` is the SDK's `{ send }` (EventStoreLike.replayEventsAfter): a copy counts what `send` is called with. */
  replayEventsAfter(lastEventId: unknown, options: ReplayOptions, ...rest: unknown[]): unknown {
    const watch = this[RECORDING];
    const { original, hooks } = watch;
    const record = watch.live(this) ? watch.recordOf(lastEventId, 'replayCalled') : undefined;
    const forwarded = record ? countingReplayOptions(record, watch, options) : options;
    let result: unknown;
    try {
      result = (original.replayEventsAfter as StoreMethod).call(original, lastEventId, forwarded, ...rest);
    } catch (error) {
      failed(record)(error);
      throw error;
    }
    if (record) {
      const settle = (value: unknown) => {
        record.replayStreamId = value;
        record.replaySettled = true;
      };
      const fail = (error: unknown) => {
        record.replaySettled = true;
        failed(record)(error);
      };
      record.pending.push(observe(result, settle, fail, hooks));
    }
    return result;
  }
}

/** The wrapper of a store with `getStreamIdForEventId` (SDK 1.24+ stores). */
class RecordingEventStoreWithLookup extends RecordingEventStore {
  getStreamIdForEventId(...args: unknown[]): unknown {
    const watch = this[RECORDING];
    const { original, hooks } = watch;
    const record = watch.live(this) ? watch.recordOf(args[0], 'lookupCalled') : undefined;
    if (record) record.lookupCalled = true;
    let result: unknown;
    try {
      result = (original.getStreamIdForEventId as StoreMethod).apply(original, args);
    } catch (error) {
      failed(record)(error);
      throw error;
    }
    if (record) {
      record.pending.push(observe(result, value => (record.lookupStreamId = value), failed(record), hooks));
    }
    return result;
  }
}

function failed(record: ReplayRecord | undefined): (error: unknown) => void {
  return error => {
    if (!record) return;
    record.storeFailed = true;
    record.storeError = error;
  };
}

type ReplayOptions = Parameters<NonNullable<EventStoreLike['replayEventsAfter']>>[1];

function countingReplayOptions(record: ReplayRecord, watch: StoreWatch, options: ReplayOptions): ReplayOptions {
  record.replayCalled = true;
  record.storeShared = watch.share.shared;
  const send = options?.send;
  if (typeof send !== 'function') return options;
  return {
    ...options,
    send: function send_(this: unknown, ...sendArgs: unknown[]) {
      if (!record.replaySettled) {
        record.replayedEvents++;
        const id = sendArgs[0];
        if ((typeof id === 'string' || typeof id === 'number') && record.replayedIds.length < MAX_REPLAYED_IDS) {
          record.replayedIds.push(String(id));
        }
        if (watch.share.shared) foreignEvent(record, watch, sendArgs[0]);
      }
      return send.apply(this, sendArgs);
    },
  };
}

/** Counts a replayed event that this process stored for another session (never throws into the store's loop). */
function foreignEvent(record: ReplayRecord, watch: StoreWatch, eventId: unknown): void {
  try {
    const owner = watch.hooks.boundary.foreignOwner(watch.recorder, eventId);
    if (owner === undefined) return;
    record.foreignEvents++;
    record.foreignOwner ??= owner;
  } catch (error) {
    watch.hooks.onError('checking a replayed event', error);
  }
}

/** The SDK sees a failed storeEvent itself; the reaction only keeps it from being reported unhandled twice. */
function ignoreRejection(): void {}

/**
 * Watches a store result without changing what the SDK awaits. For a native promise, the callbacks are attached
 * before the SDK's `await`, so they have run by the time the SDK continues.
 */
function observe(
  result: unknown,
  onValue: (value: unknown) => void,
  onError: ((error: unknown) => void) | undefined,
  hooks: RecordingHooks,
): Promise<void> {
  const safely = (fn: () => void) => {
    try {
      fn();
    } catch (error) {
      hooks.onError('recording an event store call', error);
    }
  };
  return Promise.resolve(result).then(
    value => safely(() => onValue(value)),
    error => safely(() => onError?.(error)),
  );
}
