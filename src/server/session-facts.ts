/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * SessionFacts (stack.ts) handed to the process's delivery ledger: the one implementation every stack's session
 * observer holds, one per session. It reads the ledger from the observer's runtime at each fact, so a re-patch (a
 * new runtime) or a reconfigured instrumentation (a new ledger) takes over at once.
 */
import type { SessionAccount, StoredEvent } from '../core/delivery-ledger';
import type { DeliverySession } from './server-delivery';
import type { ServerRuntime } from './server-runtime';
import type { SessionFacts } from './stack';

/** The eight possible StoredEvent values, shared: nothing is allocated per event. */
const STORED_EVENTS: readonly StoredEvent[] = Array.from({ length: 8 }, (_, i) => ({
  open: (i & 1) !== 0,
  replayable: (i & 2) !== 0,
  standalone: (i & 4) !== 0,
}));

export function storedEventOf(open: boolean, replayable: boolean, standalone: boolean): StoredEvent {
  return STORED_EVENTS[(open ? 1 : 0) | (replayable ? 2 : 0) | (standalone ? 4 : 0)]!;
}

/** The facts of one session, and its key in the ledger: it holds the session's account itself (DeliverySession). */
export class LedgerSessionFacts implements SessionFacts, DeliverySession {
  deliveryAccount: SessionAccount | undefined = undefined;
  constructor(
    /** The stack's observer of the session: the runtime its patch last bound. */
    private readonly owner: { readonly runtime: ServerRuntime },
    /** The stack's object for the session (a transport, ...): probes name the session by it. */
    readonly session: object,
  ) {}

  requestReceived(): void {
    this.owner.runtime.serverDelivery.requestReceived(this);
  }

  getReceived(): void {
    this.owner.runtime.serverDelivery.getReceived(this);
  }

  eventSent(streamId: string, event: StoredEvent): void {
    this.owner.runtime.serverDelivery.eventStored(this, streamId, event);
  }

  /** The ledger holds events of this session that wait for their delivery to be judged. */
  hasPending(): boolean {
    return this.owner.runtime.serverDelivery.hasPendingFor(this);
  }

  standaloneDropped(streamId: string, unwritten: number): void {
    this.owner.runtime.serverDelivery.standaloneDropped(this, streamId, unwritten);
  }

  replaySent(streamId: string, events: number): void {
    this.owner.runtime.serverDelivery.replaySent(this, streamId, events);
  }

  closed(): void {
    this.owner.runtime.serverDelivery.sessionClosed(this);
  }
}
