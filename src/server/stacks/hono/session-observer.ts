/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The session observer of @hono/mcp's `StreamableHTTPTransport` (one instance per session, a port of the SDK's
 * transport whose fields are all `#private`): what its wrappers see, handed to the delivery ledger as the
 * SessionFacts every stack hands it (server/stack.ts).
 *
 * Its `send` returns early, before its event store, for an event of the standalone stream while no GET stream is
 * open: the event is neither written nor stored, so nothing can replay it. The observer keeps its own view of that
 * stream (a GET answered 200, until the client drops its connection: the request's signal) and records each
 * standalone event as written live or as had nowhere to go, which the ledger judges once the session shows activity
 * after the delivery window (core/delivery-rules.ts).
 *
 * Only read, never written; every method catches its own errors and reports them through diag.
 */
import type { ServerRuntime } from '../../server-runtime';
import type { WebRequestLike } from '../../../shared/internal-types';
import { isProbeUserAgent } from '../../../shared/names';
import { protocolHasResumability } from '../../../shared/session-id';
import { HonoResume } from './resume';
import { onWebClientDrop, parentContextOf, webHeader, webHeadersGetter } from '../../web-request';
import { ServerResume } from '../../server-resume';
import { LedgerSessionFacts, storedEventOf } from '../../session-facts';

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
  /**
   * Whether the transport was constructed with an event store; undefined when forkwatch did not see it constructed
   * (the class was taken before forkwatch replaced the export, event-store.ts): its resumes are not judged.
   */
  private hasEventStore: boolean | undefined = undefined;
  /** Resume requests waiting for their answer or their replay, oldest first. */
  private readonly resumes: HonoResume[] = [];

  /** Its delivery facts, handed to the process's delivery ledger (session-facts.ts). */
  private readonly facts: LedgerSessionFacts;

  constructor(
    readonly transport: object,
    public runtime: ServerRuntime,
  ) {
    this.facts = new LedgerSessionFacts(this, transport);
  }

  /** Every request, before the transport handles it: a GET is recorded by getReceived. */
  requestReceived(ctx: HonoContextLike | undefined): void {
    try {
      const request = ctx?.req?.raw;
      const version = webHeader(request, 'mcp-protocol-version');
      if (version !== undefined) this.resumable = protocolHasResumability(version);
      if (request?.method !== 'GET' && this.resumable) this.facts.requestReceived();
    } catch (error) {
      this.failed(error);
    }
  }

  /** A GET: a listener here. Returns what to call with its answer. */
  getReceived(ctx: HonoContextLike | undefined): ((response: unknown) => void) | undefined {
    try {
      if (!this.resumable) return undefined;
      this.facts.getReceived();
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
      onWebClientDrop(request, () => {
        if (this.standalone !== connection) return;
        this.standalone = undefined;
        this.facts.standaloneDropped(STANDALONE, 0);
      });
    } catch (error) {
      this.failed(error);
    }
  }

  /** The transport was constructed, with a (watched) event store or none. */
  storeWatched(hasEventStore: boolean): void {
    this.hasEventStore = hasEventStore;
  }

  /** A GET carrying Last-Event-ID starts a server resume (span and outcome); undefined for anything else. */
  beginResume(ctx: HonoContextLike | undefined): HonoResume | undefined {
    try {
      const request = ctx?.req?.raw;
      const cursor = webHeader(request, 'last-event-id');
      if (cursor === undefined || this.hasEventStore === undefined || !this.resumable) return undefined;
      const claimed = webHeader(request, 'mcp-session-id');
      const own = (this.transport as { sessionId?: unknown }).sessionId;
      const resume = new ServerResume(this.runtime, {
        transport: TRANSPORT_ATTRS.transport,
        instance: this.transport,
        session: this,
        cursor,
        sessionId: claimed ?? (typeof own === 'string' && own !== '' ? own : undefined),
        protocolVersion: webHeader(request, 'mcp-protocol-version'),
        hasEventStore: this.hasEventStore,
        fromProbe: isProbeUserAgent(webHeader(request, 'user-agent')),
        parent: parentContextOf(request, webHeadersGetter),
      });
      const hono = new HonoResume(resume, this.runtime, this.hasEventStore, STANDALONE, done => {
        const at = this.resumes.indexOf(done);
        if (at !== -1) this.resumes.splice(at, 1);
      });
      this.resumes.push(hono);
      return hono;
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  /** The store is asked to replay after `cursor`: the oldest resume with that cursor whose replay has not begun. */
  replayStarting(cursor: unknown): HonoResume | undefined {
    return this.resumes.find(resume => resume.cursor === cursor && !resume.replayCalled);
  }

  /**
   * What a resume replayed (server-resume.ts). Not handed to the delivery ledger: the events it holds for this
   * transport are the standalone ones `send` dropped before the store, and a replay never carries any of them.
   */
  replaySent(_streamId: string, _events: number): void {}

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
      // Written live, or neither written nor stored. With a store, recorded as replayable all the same: the stream's
      // events keep one kind in the ledger (a change of kind ends the wait as abandoned), and no replay here ever
      // settles them. Without one (known from the constructor) they are what they are: an event with no connection
      // is `dropped`, and a dropped connection's last writes `in_flight` (exposure), not pending for a resume that
      // cannot come (a session talking on would have counted them `stream_moved`, a page, read or not).
      this.facts.eventSent(STANDALONE, storedEventOf(open, this.hasEventStore !== false, true));
    } catch (error) {
      this.failed(error);
    }
  }

  closed(): void {
    this.standalone = undefined;
    this.facts.closed();
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
