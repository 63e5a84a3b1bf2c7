/**
 * One resume request seen by a server transport (a GET carrying Last-Event-ID), from the request to the answer:
 * owns the span, its two span events and the metrics, and concludes exactly once.
 */
import { type Context, type Span, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { displayEventId } from '../core/event-id';
import { ATTR, SPAN, SPAN_EVENT, type ServerResumeOutcome, type ServerTransportLabel } from '../names';
import type { ForkwatchRuntime } from '../runtime';
import { sessionSpanAttributes } from '../session-id';
import { errorTypeOf, recordBoundedException } from '../span-errors';
import { type ReplayRecord, type ReplayScope, newReplayRecord } from './recording-event-store';

/** Where a resume reports what it replayed: the transport's session observer (session-observer.ts). */
export interface ReplaySink {
  replaySent(streamId: string, events: number): void;
}

export interface ServerResumeInit {
  transport: ServerTransportLabel;
  /** The transport instance, which the store calls of this request are matched against. */
  instance: object;
  /** Told what the replay sent, for the delivery ledger. */
  session: ReplaySink;
  cursor: string;
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  /** The transport had an event store when the request arrived; without one the SDK drops Last-Event-ID. */
  hasEventStore: boolean;
  parent: Context;
}

export interface ClassifyInput {
  hasEventStore: boolean;
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
 * The server has only its store's word. A store that returns a stream id for a cursor it never stored and replays
 * nothing (falling through to a fresh stream, as Cloudflare agents' McpAgent does) is `replayed` with 0 events:
 * with a shared store a legitimate empty replay looks the same, so calling it a fork here would be a guess. The
 * client's first-frame verdict catches that fork, and both spans are in one trace. Likewise, if the store wrapper
 * could not be put in place (a frozen transport), a 2xx with a store is `replayed` without a gap.
 */
export function classifyServerResume({ hasEventStore, status, record }: ClassifyInput): ServerResumeOutcome {
  if (record.storeFailed) return 'failed';
  if (status !== undefined && status >= 500) return 'failed';
  if (status !== undefined && status >= 400) return 'rejected';
  if (!hasEventStore) return 'ignored';
  if (record.replayCalled && (typeof record.replayStreamId !== 'string' || record.replayStreamId === '')) {
    return 'unknown_cursor';
  }
  return 'replayed';
}

const STATUS_MESSAGES: Record<Exclude<ServerResumeOutcome, 'replayed'>, string> = {
  unknown_cursor: 'resume answered without the session log: the event store does not know the cursor',
  ignored: 'resume answered with a fresh stream: no event store, Last-Event-ID ignored',
  rejected: 'resume rejected',
  failed: 'resume failed',
};

export class ServerResume {
  readonly span: Span;
  readonly record: ReplayRecord;
  /** The scope the SDK's handling of this request runs in (see recording-event-store.ts). */
  readonly scope: ReplayScope;
  private concluded = false;

  constructor(
    private readonly runtime: ForkwatchRuntime,
    readonly init: ServerResumeInit,
  ) {
    this.record = newReplayRecord(init.instance);
    this.scope = { record: this.record };
    this.span = runtime.tracer.startSpan(SPAN.serverResume, { attributes: this.baseAttributes() }, init.parent);
    this.span.addEvent(SPAN_EVENT.resumeCursor, {
      ...(runtime.settings.captureEventIds ? { [ATTR.cursor]: displayEventId(init.cursor) } : {}),
      ...this.sessionAttributes(),
      ...(init.protocolVersion ? { [ATTR.mcpProtocolVersion]: init.protocolVersion } : {}),
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
    const outcome = classifyServerResume({ hasEventStore: this.init.hasEventStore, status, record: this.record });
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
    if (outcome === 'replayed' && record.replayCalled && typeof record.replayStreamId === 'string') {
      this.init.session.replaySent(record.replayStreamId, record.replayedEvents);
    }
    // Only a replay from the log measures the gap; an unknown cursor's 0 events say nothing about it.
    if (outcome === 'replayed' && record.replayCalled) m.serverResumeGapEvents.record(record.replayedEvents);

    const streamId = record.replayCalled ? record.replayStreamId : record.lookupStreamId;
    const attrs: Record<string, string | number | boolean> = { [ATTR.serverOutcome]: outcome };
    if (record.replayCalled) attrs[ATTR.replayedEvents] = record.replayedEvents;
    if (typeof streamId === 'string') attrs[ATTR.replayStreamId] = displayEventId(streamId) ?? '';
    if (status !== undefined) attrs[ATTR.httpStatusCode] = status;
    if (error !== undefined) {
      attrs[ATTR.errorType] = errorTypeOf(error);
      recordBoundedException(this.span, error);
    }
    this.span.addEvent(SPAN_EVENT.replayDone, attrs);
    this.span.setAttribute(ATTR.serverOutcome, outcome);
    if (record.replayCalled) this.span.setAttribute(ATTR.replayedEvents, record.replayedEvents);
    if (status !== undefined) this.span.setAttribute(ATTR.httpStatusCode, status);
    if (outcome !== 'replayed') this.span.setStatus({ code: SpanStatusCode.ERROR, message: STATUS_MESSAGES[outcome] });
    this.span.end();
  }

  private baseAttributes(): Record<string, string | boolean> {
    return {
      [ATTR.transport]: this.init.transport,
      ...this.sessionAttributes(),
      ...(this.init.protocolVersion ? { [ATTR.mcpProtocolVersion]: this.init.protocolVersion } : {}),
      [ATTR.eventStore]: this.init.hasEventStore,
    };
  }

  private sessionAttributes(): Record<string, string> {
    return sessionSpanAttributes(this.init.sessionId, this.runtime.settings.captureRawSessionId);
  }
}
