/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * One resume request seen by a server transport (a GET carrying Last-Event-ID), from the request to the answer:
 * owns the span, its two span events and the metrics, and concludes exactly once.
 */
import type { ServerRuntime } from './server-runtime';
import { type Context, type Span, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { displayEventId } from '../core/event-id';
import { judgeReplayBoundary } from '../core/replay-boundary';
import { ATTR, SPAN, SPAN_EVENT, type ServerResumeOutcome, type ServerTransportLabel } from '../shared/names';
import { clipSessionId, hashSessionId, protocolVersionAttributes, sessionSpanAttributes } from '../shared/session-id';
import { errorTypeOf, recordBoundedException } from '../shared/span-errors';
import { type BoundaryParty, boundaryWatchOf } from './replay-boundary-watch';
import { type ReplayRecord, type ReplayScope, newReplayRecord } from './replay-record';

/** The standalone stream id a stack that does not name its own uses: the SDK's. */
const DEFAULT_STANDALONE_STREAM_ID = '_GET_stream';

/** Where a resume reports what it replayed, and what it asks about the session's streams: its stack's observer. */
export interface ReplaySink {
  /** `ids`: the first of the events' ids (replay-record.ts's MAX_REPLAYED_IDS), for the fleet's marks. */
  replaySent(streamId: string, events: number, ids?: readonly string[]): void;
  /** The resume concluded with this outcome (a revived session's first resume decides its state). */
  resumeConcluded?(outcome: ServerResumeOutcome, ownEventsReplayed: number): void;
  /** The session's standalone stream id; DEFAULT_STANDALONE_STREAM_ID when the stack does not say. */
  standaloneStreamId?(): string;
  /** Whether a request of `streamId` is still in flight (a replay of it crosses no boundary); false if not said. */
  streamInFlight?(streamId: unknown): boolean;
}

export interface ServerResumeInit {
  transport: ServerTransportLabel;
  /** The transport instance, which the store calls of this request are matched against. */
  instance: object;
  /** Told what the replay sent, for the delivery ledger. */
  session: ReplaySink;
  /** The transport in the replay-boundary watch, if its stack tells it which request streams completed live here. */
  boundary?: BoundaryParty;
  cursor: string;
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  /** The transport had an event store when the request arrived; without one the SDK drops Last-Event-ID. */
  hasEventStore: boolean;
  /** The request came from `forkwatch probe` (its User-Agent). */
  fromProbe?: boolean;
  parent: Context;
}

export interface ClassifyInput {
  hasEventStore: boolean;
  fromProbe?: boolean;
  /** HTTP status of the answer, when one was written. */
  status: number | undefined;
  record: ReplayRecord;
}

/**
 * The outcome of a resume request, from what the transport answered and what its event store did.
 *
 * - `failed`: the store threw (1.25+ then answers 500, up to 1.24 the error is swallowed after a 200), or a 5xx.
 * - `rejected`: a 4xx: 400 (invalid event id, session header missing), 404 (session unknown to this transport, or
 *   the stream went away during the replay), 406, 409 (the stream or the standalone stream is still connected).
 * - `ignored`: no event store: the SDK drops the header and opens a fresh stream.
 * - `unknown_cursor`: the store did not resolve the cursor to a stream ('' from replayEventsAfter) and the
 *   transport still answered with a stream that nothing will ever write to.
 * - `replayed`: the store resolved a stream and replayed what it had after the cursor (possibly nothing).
 *
 * - `probe_rejected`: `rejected` or `unknown_cursor` for a request from `forkwatch probe`, whose never-issued
 *   cursor and 409 retries are deliberate: counted apart so that probing never sets off a rejected-resume alert.
 *
 * The server has only its store's word. A store that returns a stream id for a cursor it never stored and replays
 * nothing (falling through to a fresh stream, as Cloudflare agents' McpAgent does) is `replayed` with 0 events:
 * with a shared store a legitimate empty replay looks the same, so calling it a fork here would be a guess. The
 * client's first-frame verdict catches that fork, and both spans are in one trace. Likewise, if the store wrapper
 * could not be put in place (a frozen transport), a 2xx with a store is `replayed` without a gap.
 */
export function classifyServerResume(input: ClassifyInput): ServerResumeOutcome {
  const outcome = classifyAnyResume(input);
  return input.fromProbe && (outcome === 'rejected' || outcome === 'unknown_cursor') ? 'probe_rejected' : outcome;
}

function classifyAnyResume({ hasEventStore, status, record }: ClassifyInput): ServerResumeOutcome {
  if (record.storeFailed) return 'failed';
  if (status !== undefined && status >= 500) return 'failed';
  if (status !== undefined && status >= 400) return 'rejected';
  if (!hasEventStore) return 'ignored';
  if (record.replayCalled && (typeof record.replayStreamId !== 'string' || record.replayStreamId === '')) {
    return 'unknown_cursor';
  }
  return 'replayed';
}

/**
 * A `replayed` resume that crossed a boundary (src/core/replay-boundary.ts) gets the boundary's outcome: events
 * this process stored for another session, or a cursor that resolved to a request stream completed here.
 */
export function boundaryOutcome(
  outcome: ServerResumeOutcome,
  record: ReplayRecord,
  session: ReplaySink,
  completedHere: (streamId: unknown) => boolean,
): ServerResumeOutcome {
  if (outcome !== 'replayed') return outcome;
  const streamId = record.replayCalled ? record.replayStreamId : record.lookupStreamId;
  const crossed = judgeReplayBoundary({
    streamId,
    standaloneStreamId: session.standaloneStreamId?.() ?? DEFAULT_STANDALONE_STREAM_ID,
    foreignEvents: record.foreignEvents,
    streamCompletedHere: completedHere(streamId),
    streamInFlight: session.streamInFlight?.(streamId) ?? false,
  });
  return crossed ?? outcome;
}

const STATUS_MESSAGES: Record<Exclude<ServerResumeOutcome, 'replayed'>, string> = {
  unknown_cursor: 'resume answered without the session log: the event store does not know the cursor',
  ignored: 'resume answered with a fresh stream: no event store, Last-Event-ID ignored',
  rejected: 'resume rejected',
  failed: 'resume failed',
  probe_rejected: "forkwatch probe's resume refused or served without the log (deliberate)",
  cross_session: "replay sent events this process stored for another session: another session's data leaked",
  completed_stream:
    'resume of a request stream that had completed here: the cursor came from another log (colliding event ids)',
};

export class ServerResume {
  readonly span: Span;
  readonly record: ReplayRecord;
  /** The scope the SDK's handling of this request runs in (see stacks/sdk/recording-event-store.ts). */
  readonly scope: ReplayScope;
  private concluded = false;

  constructor(
    private readonly runtime: ServerRuntime,
    readonly init: ServerResumeInit,
  ) {
    this.record = newReplayRecord(init.instance);
    this.scope = { cursor: init.cursor, record: this.record };
    this.span = runtime.tracer.startSpan(SPAN.serverResume, { attributes: this.baseAttributes() }, init.parent);
    this.span.addEvent(SPAN_EVENT.resumeCursor, {
      ...(runtime.settings.captureEventIds ? { [ATTR.cursor]: displayEventId(init.cursor) } : {}),
      ...this.sessionAttributes(),
      ...protocolVersionAttributes(init.protocolVersion),
      [ATTR.eventStore]: init.hasEventStore,
    });
  }

  /** The context to run the SDK's handling in: spans it starts (a store's database calls) become children. */
  get context(): Context {
    return trace.setSpan(this.init.parent ?? context.active(), this.span);
  }

  get isConcluded(): boolean {
    return this.concluded;
  }

  /** The transport answered (or, up to 1.24, finished writing the head and the replay). */
  async concludeAnswered(status: number | undefined): Promise<void> {
    if (this.concluded) return;
    // Store results observed by the wrapper settle before the SDK continues; a non-native thenable may lag.
    await Promise.all(this.record.pending);
    const party = this.init.boundary;
    const boundary = boundaryWatchOf(this.runtime);
    const outcome = boundaryOutcome(
      classifyServerResume({
        hasEventStore: this.init.hasEventStore,
        fromProbe: this.init.fromProbe === true,
        status,
        record: this.record,
      }),
      this.record,
      this.init.session,
      // forkwatch probe resumes its pings' request streams after their responses on purpose (it judges the replay
      // itself): never a colliding-ids fork. A cross-session replay to the probe is still a leak.
      streamId => this.init.fromProbe !== true && party !== undefined && boundary.completedHere(party, streamId),
    );
    this.finish(outcome, status, this.record.storeFailed ? this.record.storeError : undefined);
  }

  /** The SDK's handler threw. */
  concludeFailed(error: unknown): void {
    this.finish('failed', undefined, error);
  }

  private finish(outcome: ServerResumeOutcome, status: number | undefined, error: unknown): void {
    if (this.concluded) return;
    this.concluded = true;
    this.scope.record = undefined;
    const { transport } = this.init;
    const record = this.record;
    const m = this.runtime.instruments;
    m.serverResumes.add(1, { transport, outcome });
    // Another session's events reached nobody of theirs here, and settle nothing of this session.
    const ownEvents = record.replayedEvents - record.foreignEvents;
    this.init.session.resumeConcluded?.(outcome, ownEvents);
    const fromTheLog = outcome === 'replayed' || outcome === 'cross_session' || outcome === 'completed_stream';
    if (fromTheLog && record.replayCalled && typeof record.replayStreamId === 'string') {
      this.init.session.replaySent(record.replayStreamId, ownEvents, record.replayedIds);
    }
    // Only a replay of the session's own stream measures the gap; an unknown cursor's 0 events say nothing about it.
    if ((outcome === 'replayed' || outcome === 'cross_session') && record.replayCalled) {
      m.serverResumeGapEvents.record(ownEvents);
    }

    const streamId = record.replayCalled ? record.replayStreamId : record.lookupStreamId;
    const attrs: Record<string, string | number | boolean> = { [ATTR.serverOutcome]: outcome };
    if (record.replayCalled) attrs[ATTR.replayedEvents] = record.replayedEvents;
    if (typeof streamId === 'string') attrs[ATTR.replayStreamId] = displayEventId(streamId) ?? '';
    if (status !== undefined) attrs[ATTR.httpStatusCode] = status;
    if (record.replayCalled && record.storeShared) attrs[ATTR.storeShared] = true;
    if (outcome === 'cross_session') Object.assign(attrs, this.foreignAttributes());
    if (error !== undefined) {
      attrs[ATTR.errorType] = errorTypeOf(error);
      recordBoundedException(this.span, error);
    }
    this.span.addEvent(SPAN_EVENT.replayDone, attrs);
    this.span.setAttribute(ATTR.serverOutcome, outcome);
    if (record.replayCalled) this.span.setAttribute(ATTR.replayedEvents, record.replayedEvents);
    if (outcome === 'cross_session') this.span.setAttributes(this.foreignAttributes());
    if (status !== undefined) this.span.setAttribute(ATTR.httpStatusCode, status);
    // The probe's deliberate refusals are not errors of this server.
    if (outcome !== 'replayed' && outcome !== 'probe_rejected')
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: STATUS_MESSAGES[outcome] });
    this.span.end();
  }

  private baseAttributes(): Record<string, string | boolean> {
    return {
      [ATTR.transport]: this.init.transport,
      ...this.sessionAttributes(),
      ...protocolVersionAttributes(this.init.protocolVersion),
      [ATTR.eventStore]: this.init.hasEventStore,
    };
  }

  /** Both sessions are on the span: this one (forkwatch.session.hash) and the one whose events it was sent. */
  private foreignAttributes(): Record<string, string | number> {
    const attrs: Record<string, string | number> = { [ATTR.foreignEvents]: this.record.foreignEvents };
    const other = this.record.foreignOwner?.sessionId;
    if (typeof other === 'string' && other !== '') {
      attrs[ATTR.foreignSessionHash] = hashSessionId(other);
      if (this.runtime.settings.captureRawSessionId) attrs[ATTR.foreignSessionId] = clipSessionId(other);
    }
    return attrs;
  }

  private sessionAttributes(): Record<string, string> {
    return sessionSpanAttributes(this.init.sessionId, this.runtime.settings.captureRawSessionId);
  }
}
