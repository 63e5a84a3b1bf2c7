/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The session observer of @hono/mcp's `StreamableHTTPTransport` (one instance per session, a port of the SDK's
 * transport whose fields are all `#private`): what its wrappers see, handed to the delivery ledger.
 *
 * Its `send` returns early, before its event store, for an event of the standalone stream while no GET stream is
 * open: the event is neither written nor stored, so nothing can replay it. The observer keeps its own view of that
 * stream (a GET answered 200, until the client drops its connection: the request's signal) and records each
 * standalone event as written live or as had nowhere to go, which the ledger judges once the session shows activity
 * after the delivery window (core/delivery-rules.ts).
 *
 * Only read, never written; every method catches its own errors and reports them through diag.
 */
import type { ServerRuntime } from './server-runtime';
import type { WebRequestLike } from '../shared/internal-types';
import { protocolHasResumability } from '../shared/session-id';
import { webFlavor } from './server-flavor';
import { storedEventOf } from './transport-delivery';

/** @hono/mcp's standalone stream id (`#standaloneSseStreamId`), as the SDK's. */
const STANDALONE = '_GET_stream';
const TRANSPORT_ATTRS = { transport: 'streamable_http' } as const;

/** What a Hono context is read for: its web Request. */
export interface HonoContextLike {
  req?: { raw?: WebRequestLike };
}

interface MessageLike {
  id?: unknown;
  result?: unknown;
  error?: unknown;
}

export class HonoSessionObserver {
  private resumable = protocolHasResumability(undefined);
  /** The GET connection that carries the standalone stream now, if any. */
  private standalone: object | undefined = undefined;

  constructor(
    readonly transport: object,
    public runtime: ServerRuntime,
  ) {}

  /** Every request, before the transport handles it: a GET is recorded by getReceived. */
  requestReceived(ctx: HonoContextLike | undefined): void {
    try {
      const request = ctx?.req?.raw;
      const version = webFlavor.header(request, 'mcp-protocol-version');
      if (version !== undefined) this.resumable = protocolHasResumability(version);
      if (request?.method !== 'GET' && this.resumable) this.runtime.serverDelivery.requestReceived(this.transport);
    } catch (error) {
      this.failed(error);
    }
  }

  /** A GET: a listener here. Returns what to call with its answer. */
  getReceived(ctx: HonoContextLike | undefined): ((response: unknown) => void) | undefined {
    try {
      if (!this.resumable) return undefined;
      this.runtime.serverDelivery.getReceived(this.transport);
      const request = ctx?.req?.raw;
      return response => this.answered(request, response);
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  private answered(request: WebRequestLike | undefined, response: unknown): void {
    try {
      if ((response as { status?: unknown } | undefined)?.status !== 200 || !request) return;
      const connection = {};
      this.standalone = connection;
      webFlavor.onClientDrop(request, [], () => {
        if (this.standalone !== connection) return;
        this.standalone = undefined;
        this.runtime.serverDelivery.standaloneDropped(this.transport, STANDALONE, 0);
      });
    } catch (error) {
      this.failed(error);
    }
  }

  /** send(message, options): an event of the standalone stream is written live, or had nowhere to go. */
  sent(message: unknown, options: unknown): void {
    try {
      if (!this.resumable) return;
      const m = message as MessageLike | undefined;
      const related = (options as { relatedRequestId?: unknown } | undefined)?.relatedRequestId;
      const response = m !== null && typeof m === 'object' && ('result' in m || 'error' in m) && 'id' in m;
      if (related !== undefined || response) return; // a request stream's: written or kept by the transport
      const open = this.standalone !== undefined;
      this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
      // Written live, or neither written nor stored. Recorded as replayable all the same: the stream's events keep
      // one kind in the ledger (a change of kind ends the wait as abandoned), and no replay here ever settles them.
      this.runtime.serverDelivery.eventStored(this.transport, STANDALONE, storedEventOf(open, true, true));
    } catch (error) {
      this.failed(error);
    }
  }

  closed(): void {
    this.standalone = undefined;
    this.runtime.serverDelivery.sessionClosed(this.transport);
  }

  private failed(error: unknown): void {
    this.runtime.diag.error('recording an @hono/mcp request failed; this request is not recorded', error);
  }
}

const observers = new WeakMap<object, HonoSessionObserver>();

export function honoSessionObserverOf(transport: object, runtime: ServerRuntime): HonoSessionObserver {
  let observer = observers.get(transport);
  if (observer === undefined) {
    observer = new HonoSessionObserver(transport, runtime);
    observers.set(transport, observer);
  } else observer.runtime = runtime;
  return observer;
}
