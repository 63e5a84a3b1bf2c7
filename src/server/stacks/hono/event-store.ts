/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The event store of @hono/mcp's `StreamableHTTPTransport`, watched. The transport keeps the store it is given
 * (`options.eventStore`) in a `#private` field, out of reach of prototype wrappers, so forkwatch watches the
 * construction instead: the module's export is replaced by a `Proxy` of the class whose `construct` trap hands the
 * constructor a view of the user's options in which `eventStore` reads as a recording wrapper of the user's store
 * (the options and the store object themselves are left untouched). `instanceof`, `name`, statics and the
 * prototype are the class's own; a subclass passes through with its own `new.target`; the patcher points the
 * prototype's `constructor` at the stand-in (module-patcher.ts), so `new X().constructor === X` as without forkwatch.
 * A failure to watch the options constructs with the caller's own arguments.
 *
 * The wrapper calls the store's `storeEvent` and `replayEventsAfter` (all the transport uses of it, 0.3) with the
 * store as `this` and returns what they returned. It replaces one argument: the `{ send }` of `replayEventsAfter`, by
 * a copy that counts the events replayed before calling the transport's. What it learns goes to the transport's
 * session observer (session-observer.ts): who stored which event in a store several sessions share, and what a
 * resume's replay did.
 */
import type { ServerRuntime } from '../../server-runtime';
import { isWrapped } from '@opentelemetry/instrumentation';
import { classStandIn } from '../../../shared/class-stand-in';
import type { EventStoreLike } from '../../../shared/internal-types';
import { type BoundaryParty, type StoreShare, boundaryWatchOf } from '../../replay-boundary-watch';
import { honoSessionObserverOf } from './session-observer';

type StoreMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * The stand-in for the exported class: constructs the class itself, with the store watched. Its constructor runs once
 * per `new`, whatever it throws: the error reaches the caller as without forkwatch (only the options it reads are
 * forkwatch's view of the caller's, which answers every read as they do).
 */
export function watchHonoConstruction<T extends object>(cls: T, runtime: ServerRuntime): T {
  return classStandIn(cls, (target, args, as) => {
    const watched = runtime.enabled ? watchedArguments(args, runtime) : undefined;
    const instance = Reflect.construct(target, watched?.args ?? args, as);
    if (watched !== undefined) bind(watched.store, instance, runtime);
    return instance;
  });
}

/** The arguments with the store wrapped, or undefined to construct with the caller's own. */
function watchedArguments(
  args: unknown[],
  runtime: ServerRuntime,
): { args: unknown[]; store: HonoRecordingStore | undefined } | undefined {
  try {
    const options = args[0];
    if (options === null || typeof options !== 'object') return { args, store: undefined };
    const store = (options as { eventStore?: unknown }).eventStore;
    if (!isEventStore(store)) return { args, store: undefined };
    const recording = new HonoRecordingStore(store, runtime);
    // Every other read goes to the caller's options, their getters run on them (a class with #private fields
    // included); keys, descriptors and prototype are theirs too, so a constructor that spreads or inspects its
    // options sees what it sees without forkwatch. The target is an empty object of forkwatch's own, so a frozen
    // options object raises no Proxy invariant (descriptors are reported configurable: the target has none).
    const watchedOptions = new Proxy(Object.create(null) as object, {
      get: (_, key) => (key === 'eventStore' ? recording : Reflect.get(options, key)),
      has: (_, key) => key === 'eventStore' || Reflect.has(options, key),
      ownKeys: () => Reflect.ownKeys(options),
      getOwnPropertyDescriptor: (_, key) => {
        const own = Reflect.getOwnPropertyDescriptor(options, key);
        if (own === undefined) return undefined;
        if (key !== 'eventStore') return { ...own, configurable: true };
        return { value: recording, writable: true, enumerable: own.enumerable, configurable: true };
      },
      getPrototypeOf: () => Reflect.getPrototypeOf(options),
    });
    return { args: [watchedOptions, ...args.slice(1)], store: recording };
  } catch (error) {
    runtime.diag.error('watching an @hono/mcp event store failed; this session is not recorded', error);
    return undefined;
  }
}

/** The transport now exists: its observer learns whether it has a store, the wrapper whose transport it is. */
function bind(store: HonoRecordingStore | undefined, transport: object, runtime: ServerRuntime): void {
  try {
    honoSessionObserverOf(transport, runtime).storeWatched(store !== undefined);
    store?.bind(transport);
  } catch (error) {
    runtime.diag.error('watching an @hono/mcp event store failed; this session is not recorded', error);
  }
}

function isEventStore(store: unknown): store is EventStoreLike {
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof (store as EventStoreLike).storeEvent === 'function' &&
    typeof (store as EventStoreLike).replayEventsAfter === 'function'
  );
}

/** The wrapper the transport holds in place of the user's store. */
class HonoRecordingStore {
  private transport: object | undefined = undefined;
  /** The transport in the replay-boundary watch. */
  private party: BoundaryParty | undefined = undefined;
  private share: StoreShare | undefined = undefined;

  constructor(
    private readonly original: EventStoreLike,
    private readonly runtime: ServerRuntime,
  ) {}

  bind(transport: object): void {
    this.transport = transport;
    this.party = { transport, boundaryRecord: undefined };
    this.share = boundaryWatchOf(this.runtime).shareOf(this.original, this.party);
  }

  /** False once forkwatch is disabled or the class unpatched: the wrapper then only delegates. */
  private live(): object | undefined {
    const { transport } = this;
    if (transport === undefined || !this.runtime.enabled) return undefined;
    return isWrapped((transport as { handleGetRequest?: unknown }).handleGetRequest) ? transport : undefined;
  }

  storeEvent(): unknown {
    const { original } = this;
    // biome-ignore lint/complexity/noArguments: the transport's own arguments, whatever they are, with no copy
    const result = (original.storeEvent as StoreMethod).apply(original, arguments as unknown as unknown[]);
    const transport = this.live();
    // Who stored which event, only in a store object other sessions use too (replay-boundary-watch.ts).
    const { party } = this;
    if (transport !== undefined && party !== undefined && this.share?.shared) {
      const boundary = boundaryWatchOf(this.runtime);
      Promise.resolve(result).then(
        eventId => this.safely(() => boundary.stored(party, eventId)),
        () => {}, // the transport sees the failure itself
      );
    }
    return result;
  }

  replayEventsAfter(lastEventId: unknown, sender: unknown, ...rest: unknown[]): unknown {
    const { original } = this;
    const transport = this.live();
    const replay =
      transport === undefined
        ? undefined
        : this.safely(() => honoSessionObserverOf(transport, this.runtime).replayStarting(lastEventId));
    const { party } = this;
    const forwarded = replay && party ? replay.countingSender(sender, party, this.share) : sender;
    let result: unknown;
    try {
      result = (original.replayEventsAfter as StoreMethod).call(original, lastEventId, forwarded, ...rest);
    } catch (error) {
      replay?.failed(error);
      throw error;
    }
    replay?.settling(result);
    return result;
  }

  private safely<R>(fn: () => R): R | undefined {
    try {
      return fn();
    } catch (error) {
      this.runtime.diag.error('recording an @hono/mcp event store call failed', error);
      return undefined;
    }
  }
}
