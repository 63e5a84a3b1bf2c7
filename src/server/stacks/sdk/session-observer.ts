/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The server session observer: one per transport instance (one MCP session), the one place that knows the protocol
 * version the session speaks, whether forkwatch records it (protocol versions with resumability; from 2026-07-28
 * forkwatch stays silent), and every fact handed to the delivery ledger, as the SessionFacts every stack hands it
 * (server/stack.ts):
 *
 * - every request of the session but a GET (`requestReceived`) and every GET (`getReceived`);
 * - every event stored, and whether it reached its stream's connection here: written live (`liveEventWritten`, from
 *   writeSSEEvent; the store call only expected it), or stored with no connection (`eventStoring`, from the store
 *   wrapper, whose reaction records it once the store resolved); for the replay-boundary watch, who stored it
 *   (shared stores only) and which request streams completed live;
 * - every event `send` had to write without a store and had nowhere to write (`sentWithoutStore`);
 * - the client dropping the connection of the standalone stream (`StandaloneConnection`);
 * - what each resume replayed (`replaySent`, from server-resume.ts) and `close()` (`closed`).
 *
 * The patch's wrappers (patch.ts) only hand facts on; each method here catches its own errors and
 * reports them through diag, so nothing here throws into the SDK.
 */
import type { ServerRuntime } from '../../server-runtime';
import type { StoredEvent } from '../../../core/delivery-ledger';
import type {
  HttpRequestLike,
  StreamableHttpServerTransportLike,
  TransportSendOptionsLike,
} from '../../../shared/internal-types';
import { type ServerResumeOutcome, type ServerTransportLabel, isProbeUserAgent } from '../../../shared/names';
import { protocolHasResumability } from '../../../shared/session-id';
import { isJsonRpcResponse } from '../../../core/replay-boundary';
import { type RecordingHooks, type StoreRecorder, ensureRecordingStore } from './recording-event-store';
import { type StoreShare, type TransportRecord, boundaryWatchOf } from '../../replay-boundary-watch';
import type { Flavor } from './flavors';
import { parentContextOf } from '../../web-request';
import { LedgerSessionFacts, storedEventOf } from '../../session-facts';
import { LiveWrites } from './live-writes';
import { ServerResume } from '../../server-resume';
import { SessionRevival } from './session-revival';
import {
  isPrimingMessage,
  sendTarget,
  standaloneStreamId,
  storedEvent,
  streamHasRequestInFlight,
  streamIsOpen,
} from './transport-fields';

const TRANSPORT: ServerTransportLabel = 'streamable_http';
/** Metric attributes, shared: nothing is allocated per event. */
const TRANSPORT_ATTRS = { transport: TRANSPORT };

/** The GET connection of a session, which may come to carry its standalone stream. */
export interface StandaloneConnection {
  /** The answer: a 200 that serves the standalone stream (a fresh GET, or a resume whose store resolved to it). */
  answered(status: number | undefined, resumedStreamId?: unknown): void;
}

export class ServerSessionObserver implements StoreRecorder {
  /** The latest MCP-Protocol-Version the transport received has resumability: set per request, read per event. */
  private resumableNow = protocolHasResumability(undefined);
  /**
   * The reaction that records a stored event of the stream stored to last (events come in runs on one stream):
   * made once per run, not once per event.
   */
  private reactionStreamId: string | undefined = undefined;
  private reactionDecided = false;
  private reaction: ((eventId: unknown) => void) | undefined = undefined;
  /** Live events stored and not yet written (live-writes.ts); made at the first. */
  private liveWritesMade: LiveWrites | undefined = undefined;
  /**
   * Arms the drop watch of the connection that carries the standalone stream, until the stream's first event on it
   * (see watchStandaloneConnection); undefined once armed or when no connection carries it.
   */
  private armStandaloneDrop: (() => void) | undefined = undefined;
  /** The store's share, as of its last storeEvent call. */
  private share: StoreShare | undefined = undefined;
  /** Whether this transport serves a revived session, and whether its GETs are answered empty (issue 41). */
  readonly revival = new SessionRevival();
  /** Counts the priming events and events of non-string streams: nothing to record about their delivery. */
  private readonly countOnly = () => this.eventCounted();
  /** Its delivery facts, handed to the process's delivery ledger (session-facts.ts). */
  private readonly facts: LedgerSessionFacts;
  /** What the replay-boundary watch knows of this transport (replay-boundary-watch.ts). */
  boundaryRecord: TransportRecord | undefined = undefined;

  private get liveWrites(): LiveWrites {
    this.liveWritesMade ??= new LiveWrites();
    return this.liveWritesMade;
  }

  constructor(
    readonly transport: StreamableHttpServerTransportLike,
    /** The patch that saw the transport last: a re-patch (setConfig, a new instrumentation) takes over. */
    public runtime: ServerRuntime,
    public flavor: Flavor,
  ) {
    this.facts = new LedgerSessionFacts(this, transport);
  }

  /** The session speaks a protocol version with resumability, so forkwatch records it. */
  get resumable(): boolean {
    return this.resumableNow;
  }

  /**
   * Every request and every send, before the SDK handles it: notes the protocol version and puts the recording
   * wrapper around the event store. Runs per call: no closure.
   */
  prepare(req: HttpRequestLike | undefined, hooks: RecordingHooks): void {
    try {
      if (req !== undefined) {
        const version = this.flavor.header(req, 'mcp-protocol-version');
        if (version !== undefined) this.resumableNow = protocolHasResumability(version);
      }
      ensureRecordingStore(this.transport, hooks, this);
    } catch (error) {
      this.runtime.diag.error('wrapping the event store failed; this request is not recorded', error);
    }
  }

  /**
   * Every request, before the SDK handles it: true for the transport's first request when it carries a session id
   * (a session this process never held, revived by the app's hydration if the transport accepts it).
   */
  requestStarted(req: HttpRequestLike | undefined): boolean {
    try {
      // Only the first request's session id counts: later ones are not read (issue 50: a header read per request).
      // A stateless transport (sessionIdGenerator: undefined) has no session to revive: a kept id is ignored by it.
      if (!this.revival.awaitsFirstRequest || isStateless(this.transport))
        return this.revival.requestStarted(undefined);
      return this.revival.requestStarted(this.flavor.header(req, 'mcp-session-id'));
    } catch (error) {
      this.runtime.diag.error('reading a request failed; this request is not recorded', error);
      return false;
    }
  }

  /** The answer to the first request (see requestStarted). */
  firstRequestAnswered(status: number | undefined): void {
    this.revival.answered(status, this.runtime);
  }

  /** A resume of this transport concluded (from server-resume.ts). */
  resumeConcluded(outcome: ServerResumeOutcome, ownEventsReplayed: number): void {
    this.revival.resumeConcluded(outcome, ownEventsReplayed, this.runtime);
  }

  /** A request other than a GET: a GET may be a late resume, which is no proof that events were lost. */
  requestReceived(req: HttpRequestLike | undefined): void {
    if (req?.method !== 'GET' && this.resumable) {
      this.facts.requestReceived();
      this.runtime.serverDelivery.fleet?.seen(
        this.transport,
        this.sessionId(req),
        req?.method === 'DELETE' ? 'delete' : 'request',
      );
    }
  }

  /** The session's id: the transport's own, else the request's header (for the fleet's delivery marks). */
  private sessionId(req: HttpRequestLike | undefined): string | undefined {
    const own = this.transport.sessionId;
    if (typeof own === 'string' && own !== '') return own;
    return req === undefined ? undefined : this.flavor.header(req, 'mcp-session-id');
  }

  /** A GET's Last-Event-ID, read once for getReceived and beginResume; undefined when absent or unreadable. */
  cursorOf(req: HttpRequestLike | undefined): string | undefined {
    try {
      return this.flavor.header(req, 'last-event-id');
    } catch (error) {
      this.runtime.diag.error('reading a GET failed; this request is not recorded', error);
      return undefined;
    }
  }

  /**
   * A GET (`cursor`: its Last-Event-ID): a listener here. Returns the watch on its connection, which may come to carry
   * the standalone stream.
   */
  getReceived(
    req: HttpRequestLike | undefined,
    args: unknown[],
    cursor: string | undefined,
  ): StandaloneConnection | undefined {
    if (!this.resumable) return undefined;
    this.facts.getReceived();
    this.revival.getReceived(this.runtime);
    const fresh = cursor === undefined;
    if (fresh) this.revival.freshGet(this.runtime);
    this.runtime.serverDelivery.fleet?.seen(this.transport, this.sessionId(req), fresh ? 'fresh_get' : 'resume_get');
    try {
      return this.watchStandaloneConnection(req, args);
    } catch (error) {
      this.runtime.diag.error('watching a GET connection failed; this request is not recorded', error);
      return undefined;
    }
  }

  /**
   * A storeEvent call: returns what records it once the store resolved, if anything must (see
   * StoreRecorder.eventStoring). Per event of the common kind (a notification on a store of this session's own, its
   * stream connected here): a count and one expected write, no reaction; the write records it (`liveEventWritten`).
   * An event stored while its stream has no connection gets the stream's shared reaction (made once per run of
   * events, not per event). Rare events get a reaction of their own: responses (they complete their request stream)
   * and every event of a store object other sessions use too (who stored what).
   */
  eventStoring(streamId: unknown, message: unknown, share: StoreShare): ((eventId: unknown) => void) | undefined {
    if (!this.resumable) return undefined;
    this.share = share;
    if (isJsonRpcResponse(message)) return this.eventStoringAlone(streamId, message, share);
    if (typeof streamId !== 'string' || isPrimingMessage(message)) {
      return share.shared ? this.eventStoringAlone(streamId, message, share) : this.countOnly;
    }
    const open = streamIsOpen(this.transport, streamId);
    // The Node transport up to 1.24 chose a request stream's connection before the store call: decided already.
    const decided = this.flavor.lookupBeforeStore && streamId !== standaloneStreamId(this.transport);
    if (open && decided) {
      if (share.shared) return this.eventStoringAlone(streamId, message, share);
      this.eventStored(streamId, true);
      return undefined;
    }
    if (open) {
      if (this.armStandaloneDrop !== undefined && streamId === standaloneStreamId(this.transport))
        this.standaloneEvent();
      this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
      this.liveWrites.expect(streamId);
      return undefined;
    }
    if (this.reaction === undefined || this.reactionStreamId !== streamId || this.reactionDecided !== decided) {
      this.reactionStreamId = streamId;
      this.reactionDecided = decided;
      this.reaction = eventId => this.storedWithoutConnection(streamId, decided, eventId);
    }
    return this.reaction;
  }

  /**
   * An event stored while its stream had no connection here, now resolved. Its reaction runs after those of every
   * earlier store of the stream, so events still expected were not written to the connection they were stored for:
   * they wait with this one. Unless a resume reconnected the stream meanwhile (and `decided` is false): then the SDK
   * writes this event to it now, which records it, and the resume's replay covered the others.
   */
  private storedWithoutConnection(streamId: string, decided: boolean, eventId: unknown): void {
    try {
      this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
      // Who stored what, only in a store object other sessions use too (replay-boundary-watch.ts).
      if (this.share?.shared) boundaryWatchOf(this.runtime).stored(this, eventId);
      const open = !decided && streamIsOpen(this.transport, streamId);
      this.waitWithUnwritten(streamId, open, 1);
      if (!open) this.markPending(streamId, eventId);
    } catch (error) {
      this.runtime.diag.error('recording a stored event failed', error);
    }
  }

  /**
   * The stream's expected events that were never written wait in the store, with `events` more stored without a
   * connection; unless the stream is `open` again: a resume reconnected it, and its replay covered them.
   */
  private waitWithUnwritten(streamId: string, open: boolean, events = 0): void {
    const unwritten = this.liveWritesMade?.take(streamId) ?? 0;
    if (open || events + unwritten === 0) return;
    const event = storedEventOf(false, true, streamId === standaloneStreamId(this.transport));
    for (let i = 0; i < events + unwritten; i++) {
      this.facts.eventSent(streamId, event);
    }
  }

  /**
   * writeSSEEvent(target, b, c, d) returned `result` on a transport with forkwatch's store wrapper: a live event
   * reached the stream's connection, unless the target is not a mapped connection (a replay writes before the SDK
   * maps its stream) or the write failed (the stream was gone: the event waits in the store).
   */
  liveEventWritten(target: unknown, b: unknown, c: unknown, d: unknown, result: unknown): void {
    try {
      // Responses are recorded by their own reaction (see eventStoring).
      if (!this.resumable || isJsonRpcResponse(this.flavor.writtenMessage(b, c))) return;
      const { transport } = this;
      const standaloneId = standaloneStreamId(transport);
      // Up to 1.24 a request stream's event was recorded at its store call (see eventStoring).
      if (this.flavor.lookupBeforeStore && transport._streamMapping?.get?.(standaloneId) !== target) return;
      const streamId = this.liveWrites.streamOfWrite(transport._streamMapping, target);
      if (streamId === undefined) return;
      if (streamId === standaloneId && this.armStandaloneDrop !== undefined) this.standaloneEvent();
      this.liveWrites.written(streamId);
      if (this.share?.shared) boundaryWatchOf(this.runtime).stored(this, this.flavor.writtenEventId(c, d));
      const event = storedEventOf(this.flavor.wrote(result), true, streamId === standaloneId);
      if (streamId === standaloneId) this.revival.delivered(1);
      this.facts.eventSent(streamId, event);
    } catch (error) {
      this.runtime.diag.error('recording a written event failed', error);
    }
  }

  private eventStoringAlone(streamId: unknown, message: unknown, share: StoreShare): (eventId: unknown) => void {
    const priming = isPrimingMessage(message);
    const openAtCall = this.flavor.lookupBeforeStore && streamIsOpen(this.transport, streamId);
    return eventId => {
      try {
        // Who stored what, only in a store object other sessions use too (replay-boundary-watch.ts).
        if (share.shared) boundaryWatchOf(this.runtime).stored(this, eventId);
        if (priming || typeof streamId !== 'string') return this.eventCounted();
        const event = this.eventStored(streamId, openAtCall);
        if (event === undefined) return;
        if (!event.open) this.markPending(streamId, eventId);
        // A response written nowhere: the stream's events that were never written wait with it (see eventStoring).
        this.waitWithUnwritten(streamId, event.open);
        // A response written live completes its request stream: a later resume of it is another log's cursor.
        if (event.open && !event.standalone && isJsonRpcResponse(message)) {
          boundaryWatchOf(this.runtime).responseWritten(this, streamId);
        }
      } catch (error) {
        this.runtime.diag.error('recording a stored event failed', error);
      }
    };
  }

  private eventCounted(): void {
    try {
      this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
    } catch (error) {
      this.runtime.diag.error('recording a stored event failed', error);
    }
  }

  /** The store resolved: the SDK now writes the event if its stream has a connection here, and so it is recorded. */
  private eventStored(streamId: string, openAtCall: boolean): StoredEvent | undefined {
    try {
      this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
      const event = storedEvent(this.transport, streamId, openAtCall, this.flavor.lookupBeforeStore);
      this.facts.eventSent(streamId, event);
      return event;
    } catch (error) {
      this.runtime.diag.error('recording a stored event failed', error);
      return undefined;
    }
  }

  /**
   * A `send` without an event store writes an event at once or drops it (no connection for its stream): dropped
   * events go to the ledger (as `dropped` unless the client went away) and count as events the server produced.
   * With a store, the event is recorded by the store wrapper: nothing more per event here.
   */
  sent(args: unknown[]): void {
    try {
      if (this.transport._eventStore || !this.resumable) return;
      const target = sendTarget(this.transport, args[0], args[1] as TransportSendOptionsLike | undefined);
      if (!target) return;
      const open = streamIsOpen(this.transport, target.streamId);
      if (open && target.standalone && this.armStandaloneDrop !== undefined) this.standaloneEvent();
      if (!open) this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
      this.facts.eventSent(target.streamId, storedEventOf(open, false, target.standalone));
    } catch (error) {
      this.runtime.diag.error('recording a send without an event store failed; this request is not recorded', error);
    }
  }

  /** writeSSEEvent returned `result`: counts the event for a transport without a store (with one, storeEvent did). */
  sseEventWritten(result: unknown): void {
    try {
      if (!this.transport._eventStore && this.flavor.wrote(result) && this.resumable) {
        this.revival.delivered(1);
        this.runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
      }
    } catch (error) {
      this.runtime.diag.error('counting an SSE event failed', error);
    }
  }

  /** The fleet's delivery marks (issue 49): an event stored here while its stream had no connection here. */
  private markPending(streamId: string, eventId: unknown): void {
    this.runtime.serverDelivery.fleet?.pending(
      this.sessionId(undefined),
      eventId,
      streamId === standaloneStreamId(this.transport),
    );
  }

  /** The session's standalone stream id, as the transport names it (for the replay-boundary check). */
  standaloneStreamId(): string {
    return standaloneStreamId(this.transport);
  }

  /** Whether a request of `streamId` is still in flight on the transport (for the replay-boundary check). */
  streamInFlight(streamId: unknown): boolean {
    return streamHasRequestInFlight(this.transport, streamId);
  }

  /** A resume here replayed `events` events of `streamId` (`ids`: the first of their ids). */
  replaySent(streamId: string, events: number, ids: readonly string[] = []): void {
    this.runtime.serverDelivery.fleet?.delivered(this.sessionId(undefined), ids);
    // Events still expected on the stream are in the store after the client's cursor: this replay or the reconnected
    // stream delivers them.
    this.liveWritesMade?.take(streamId);
    this.revival.delivered(events);
    this.facts.replaySent(streamId, events);
  }

  /** The standalone stream's first event on its connection: the connection's drop now matters (watchStandaloneConnection). */
  private standaloneEvent(): void {
    const arm = this.armStandaloneDrop;
    this.armStandaloneDrop = undefined;
    arm?.();
  }

  /** The SDK's close() tears its streams down synchronously; nothing can come back for pending events now. */
  closed(): void {
    this.armStandaloneDrop = undefined;
    this.liveWritesMade?.clear();
    this.revival.closed(this.runtime);
    this.facts.closed();
  }

  /** A GET carrying Last-Event-ID (`cursor`) starts a server resume (span and outcome); undefined for anything else. */
  beginResume(req: HttpRequestLike | undefined, cursor: string): ServerResume | undefined {
    try {
      const protocolVersion = this.flavor.header(req, 'mcp-protocol-version');
      if (!protocolHasResumability(protocolVersion)) return undefined;
      const claimed = this.flavor.header(req, 'mcp-session-id');
      const { transport } = this;
      const own =
        typeof transport.sessionId === 'string' && transport.sessionId !== '' ? transport.sessionId : undefined;
      return new ServerResume(this.runtime, {
        transport: TRANSPORT,
        instance: transport,
        session: this,
        boundary: this,
        cursor,
        sessionId: claimed ?? own,
        protocolVersion,
        hasEventStore: Boolean(transport._eventStore),
        fromProbe: isProbeUserAgent(this.flavor.header(req, 'user-agent')),
        parent: parentContextOf(req, this.flavor.getter),
      });
    } catch (error) {
      this.runtime.diag.error('starting a server resume failed; this request is not recorded', error);
      return undefined;
    }
  }

  /**
   * Tells the delivery ledger when the client drops a connection that carries the session's standalone stream: the
   * events written on it just before may never have reached the client (see delivery-ledger.ts). A drop before the
   * answer, or of a GET answered otherwise (409, 404, a request stream's resume), says nothing.
   */
  private watchStandaloneConnection(req: HttpRequestLike | undefined, args: unknown[]): StandaloneConnection {
    const { transport, runtime } = this;
    let carries = false;
    const arm = this.flavor.onClientDrop(req, args, () => {
      if (!carries) return;
      const streamId = standaloneStreamId(transport);
      // Stored for this connection and not written yet: in flight, as the writes just before the drop.
      this.facts.standaloneDropped(streamId, this.liveWritesMade?.take(streamId) ?? 0);
    });
    return {
      answered: (status, resumedStreamId) => {
        try {
          carries =
            status === 200 && (resumedStreamId === undefined || resumedStreamId === standaloneStreamId(transport));
          // A drop says something only about the events of this connection (none yet on a fresh one: the watch is
          // armed at its first) and about a replay's leftovers (a resume, or events the session holds pending).
          if (!carries) {
            if (this.armStandaloneDrop === arm) this.armStandaloneDrop = undefined;
          } else if (resumedStreamId !== undefined || this.facts.hasPending()) {
            this.armStandaloneDrop = undefined;
            arm();
          } else this.armStandaloneDrop = arm;
          this.revival.getAnswered(status);
        } catch (error) {
          runtime.diag.error('watching a GET connection failed; this request is not recorded', error);
        }
      },
    };
  }
}

const observers = new WeakMap<object, ServerSessionObserver>();

/** The transport's observer, bound to the patch that calls. */
export function sessionObserverOf(
  transport: StreamableHttpServerTransportLike,
  runtime: ServerRuntime,
  flavor: Flavor,
): ServerSessionObserver {
  let observer = observers.get(transport);
  if (observer === undefined) {
    observer = new ServerSessionObserver(transport, runtime, flavor);
    observers.set(transport, observer);
  } else {
    observer.runtime = runtime;
    observer.flavor = flavor;
  }
  return observer;
}

/** The observer of a transport the patch has seen, for the store wrapper's hooks. */
export function knownSessionObserver(transport: object): ServerSessionObserver | undefined {
  return observers.get(transport);
}

/**
 * True for a transport built in stateless mode (`sessionIdGenerator: undefined`, what mcp-handler and
 * @vercel/mcp-adapter build per request): its constructor sets the field to undefined. A transport without the field
 * (another version or stack) is not taken for stateless.
 */
function isStateless(transport: StreamableHttpServerTransportLike): boolean {
  const inner = transport._webStandardTransport;
  const core = inner !== null && typeof inner === 'object' ? (inner as StreamableHttpServerTransportLike) : transport;
  return Object.hasOwn(core, 'sessionIdGenerator') && core.sessionIdGenerator === undefined;
}
