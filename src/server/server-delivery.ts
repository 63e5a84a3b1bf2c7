/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger of this process's server transports (src/core/delivery-ledger.ts), with its clock: one
 * unref'd timer that exists only while some session holds pending events, and the counter it reports to. The timer
 * comes from `node:timers`, not the global `setTimeout`: a host that fakes timers (test suites counting them with
 * vi.getTimerCount()) neither sees nor discards it, and it is cleared as soon as nothing is pending.
 *
 * Only the stacks' session observers tell it, through the SessionFacts each holds (stack.ts, session-facts.ts), per
 * session (a transport instance, or a session id of a transport that serves them all), what the transport did: each
 * event stored (or written without a store) and whether its stream had an open connection here, every request of the
 * session, every GET, a dropped standalone connection, every replay, and close(). Its methods are named for those
 * facts; the ledger's own (stored, activity, ...) for what they mean to it.
 */
import {
  DeliveryLedger,
  type DeliveryLedgerOptions,
  type LedgerSessionKey,
  type StoredEvent,
  type UndeliveredReason,
  probeDeliveryLedger,
} from '../core/delivery-ledger';
import { clearTimeout, setTimeout } from 'node:timers';
import type { FleetDeliveryMarks } from '../shared/types';
import { FleetDelivery } from './fleet-delivery';
import {
  SERVER_SHARED_UNREPLAYED_REASONS,
  type ServerFleetUndeliveredReason,
  type ServerSharedUnreplayedReason,
  type ServerTransportLabel,
  type ServerUndeliveredReason,
} from '../shared/names';

/**
 * A session as the server's ledger knows it: the SessionFacts its stack's observer holds (session-facts.ts), which
 * keeps the session's account, and the stack's own object for the session (a transport, ...), by which probes name it.
 */
export interface DeliverySession extends LedgerSessionKey {
  readonly session: object;
}

export interface ServerDeliveryHost {
  /** Adds to forkwatch_server_undelivered_events_total. */
  countUndelivered(transport: ServerTransportLabel, reason: ServerUndeliveredReason, events: number): void;
  /** Adds to forkwatch_server_shared_unreplayed_events_total (with a shared event store). */
  countSharedUnreplayed(transport: ServerTransportLabel, reason: ServerSharedUnreplayedReason, events: number): void;
  /** Adds to forkwatch_server_replayed_unpending_events_total. */
  countReplayedUnpending(transport: ServerTransportLabel, events: number): void;
  /** Adds to forkwatch_server_fleet_undelivered_events_total (with fleet delivery marks). */
  countFleetUndelivered(transport: ServerTransportLabel, reason: ServerFleetUndeliveredReason, events: number): void;
  now(): number;
  onError(what: string, error: unknown): void;
}

/** The core's reasons are the names' reasons: a compile-time check that the two lists agree. */
const sameReasons = (reason: UndeliveredReason): ServerUndeliveredReason => reason;
const isSharedReason = (reason: ServerUndeliveredReason): reason is ServerSharedUnreplayedReason =>
  (SERVER_SHARED_UNREPLAYED_REASONS as readonly string[]).includes(reason);

export class ServerDelivery {
  private readonly ledger: DeliveryLedger<DeliverySession>;
  /** Sweeps run so far (read through probeServerDelivery). */
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: probeServerDelivery reads it by element access
  private sweeps = 0;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  private readonly tickMs: number;
  /** The fleet's delivery marks (fleetDelivery), if the app handed some: they judge what one process cannot. */
  readonly fleet: FleetDelivery | undefined;

  /**
   * `sharedStore`: every replica reads one event store, so another replica may replay what this one stored; the
   * loss reasons one process cannot judge alone (`stream_moved`, `no_listener`) go to the fleet balance's counter.
   */
  constructor(
    options: Partial<DeliveryLedgerOptions>,
    private readonly host: ServerDeliveryHost,
    private readonly transport: ServerTransportLabel = 'streamable_http',
    private readonly sharedStore = false,
    marks?: FleetDeliveryMarks,
  ) {
    this.ledger = new DeliveryLedger(
      options,
      (_key, core, events) => {
        const reason = sameReasons(core);
        // With the fleet's marks, what one process cannot judge alone is the marks' to count (each event once).
        if ((this.sharedStore || this.fleet) && isSharedReason(reason)) {
          if (!this.fleet) this.host.countSharedUnreplayed(this.transport, reason, events);
        } else this.host.countUndelivered(this.transport, reason, events);
      },
      (_key, events) => this.host.countReplayedUnpending(this.transport, events),
    );
    this.fleet =
      marks === undefined
        ? undefined
        : new FleetDelivery(marks, this.ledger.options.windowMs, host, transport, sharedStore);
    // A quarter of the window, so a verdict is at most that late; never busier than every 20 ms.
    this.tickMs = Math.min(5_000, Math.max(20, Math.floor(this.ledger.options.windowMs / 4)));
  }

  /** Once per event: no closure, no allocation. */
  eventStored(session: DeliverySession, streamId: string, event: StoredEvent): void {
    try {
      this.ledger.stored(session, streamId, event, this.host.now());
      if (!event.open) this.schedule();
      else this.stopWhenSettled();
    } catch (error) {
      this.host.onError('recording a stored event', error);
    }
  }

  /** A request of the session other than a GET. Per request, like eventStored: no closure. */
  requestReceived(session: DeliverySession): void {
    try {
      this.ledger.activity(session, this.host.now());
    } catch (error) {
      this.host.onError('recording session activity', error);
    }
    this.stopWhenSettled();
  }

  /** The session holds events whose delivery is not judged yet. */
  hasPendingFor(session: DeliverySession): boolean {
    return this.ledger.hasPendingFor(session);
  }

  getReceived(session: DeliverySession): void {
    try {
      this.ledger.listenerOpened(session, this.host.now());
    } catch (error) {
      this.host.onError('recording a GET', error);
    }
    this.stopWhenSettled();
  }

  /** The client dropped the connection of the session's standalone stream (see the ledger's in-flight rule). */
  /** `unwritten`: events stored for that connection whose write had not come yet (in flight too). */
  standaloneDropped(session: DeliverySession, streamId: string, unwritten = 0): void {
    try {
      this.ledger.connectionDropped(session, streamId, this.host.now(), unwritten);
      if (this.ledger.hasPending) this.schedule();
    } catch (error) {
      this.host.onError('recording a dropped connection', error);
    }
  }

  replaySent(session: DeliverySession, streamId: string, events: number): void {
    this.guard('recording a replay', () => this.ledger.replayed(session, streamId, events));
    this.stopWhenSettled();
  }

  sessionClosed(session: DeliverySession): void {
    try {
      this.ledger.closed(session, this.host.now());
    } catch (error) {
      this.host.onError('recording a closed session', error);
    }
    this.stopWhenSettled();
  }

  /** Judges what is due now (the timer does this on its own). */
  sweep(): void {
    this.guard('sweeping the delivery ledger', () => {
      this.sweeps++;
      this.ledger.sweep(this.host.now());
    });
  }

  /** Stops the timer and forgets everything (the instrumentation was reconfigured or disabled). */
  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.ledger.clear();
  }

  /** Nothing pending any more: no timer is left armed. Cheap enough for every event (one field read). */
  private stopWhenSettled(): void {
    if (this.timer === undefined || this.ledger.hasPending) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sweep();
      if (this.ledger.hasPending) this.schedule();
    }, this.tickMs);
    // Never keeps a process alive: a process that is exiting has nobody left to report to.
    this.timer.unref?.();
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.host.onError(what, error);
    }
  }
}

/** Read-only views of the server's delivery ledger for tests and the lab; forkwatch itself never reads them. */
export interface ServerDeliveryProbe {
  /** Sessions that hold pending events. */
  readonly sessionsWithPending: number;
  /** Pending events of a session, named by its stack's object (a transport). */
  pendingEvents(session: object): number;
  /** Sweeps run so far: tests wait for one after a window instead of sleeping. */
  readonly sweeps: number;
  readonly options: DeliveryLedgerOptions;
  /** Streams whose window is still running now: a resume may yet settle them. */
  streamsInWindow(): number;
}

export function probeServerDelivery(delivery: ServerDelivery): ServerDeliveryProbe {
  // Element access reaches the private fields on purpose: the probe is the one window for tests.
  const ledger = delivery['ledger'];
  const probe = probeDeliveryLedger(ledger);
  return {
    get sweeps() {
      return delivery['sweeps'];
    },
    options: ledger.options,
    get sessionsWithPending() {
      return probe.sessionsWithPending;
    },
    pendingEvents: session => {
      for (const key of probe.sessionsPending()) if (key.session === session) return probe.pendingEvents(key);
      return 0;
    },
    streamsInWindow: () => probe.streamsInWindow(delivery['host'].now()),
  };
}
