/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * One resume attempt of a client stream, from the GET that carries the cursor to its verdict: owns the span,
 * its two span events and the metrics, and makes sure each attempt is concluded exactly once.
 */
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanStatusCode,
  context,
  trace,
} from '@opentelemetry/api';
import { displayEventId } from '../../core/event-id';
import { evidenceOf } from '../../core/evidence';
import type { SessionRecord } from '../../core/ledger';
import type { CursorlessVerdict, FirstFrameVerdict, ForkReason, ResumeOutcome } from '../../core/verdict';
import { ATTR, type ClientTransportLabel, SPAN, SPAN_EVENT } from '../../shared/names';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import { protocolVersionAttributes, sessionSpanAttributes } from '../../shared/session-id';
import { errorTypeOf, recordBoundedException } from '../../shared/span-errors';
import type { ResumeVerdictInfo } from '../../shared/types';

export interface ResumeAttemptInit {
  transport: ClientTransportLabel;
  session: SessionRecord;
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  /** The Last-Event-ID sent, or undefined when the client dropped a cursor it held. */
  cursor: string | undefined;
  /** The cursor the client held for this stream (equal to `cursor` unless it was dropped). */
  heldCursor: string;
  /** When the stream being resumed was lost (monotonic ms), if known. */
  lostAt: number | undefined;
  /**
   * The span of the attempt whose stream this one reconnects, if any: outside every context, it is the parent. Its
   * span context only, so a long run of reconnects holds no chain of attempts.
   */
  follows?: SpanContext | undefined;
}

/**
 * The reconnects of one lost stream form one trace: the attempt runs in the app's context, or, when the app runs in
 * none, under the attempt it follows (forkwatch does not enter contexts of its own: entered-context.ts).
 */
function parentOf(init: ResumeAttemptInit): Context {
  const active = context.active();
  if (active !== ROOT_CONTEXT || init.follows === undefined) return active;
  return trace.setSpanContext(active, init.follows);
}

export class ResumeAttempt {
  readonly span: Span;
  readonly startedAt = nowMs();
  readonly attemptNumber: number;
  private concluded = false;
  outcome: ResumeOutcome | undefined;
  private inconclusiveReason: string | undefined;
  private judgesCursorless = false;
  reason: ForkReason | undefined;
  httpStatus: number | undefined;

  constructor(
    private readonly runtime: ForkwatchRuntime,
    readonly init: ResumeAttemptInit,
  ) {
    const settings = runtime.settings;
    this.attemptNumber = ++init.session.resumeAttempts;
    this.span = runtime.tracer.startSpan(SPAN.clientResume, { attributes: this.baseAttributes() }, parentOf(init));
    const ids = settings.captureEventIds;
    this.span.addEvent(SPAN_EVENT.resumeCursor, {
      ...(ids && init.cursor !== undefined ? { [ATTR.cursor]: displayEventId(init.cursor) } : {}),
      ...(ids && init.session.lastConsumedId !== undefined
        ? { [ATTR.lastConsumedId]: displayEventId(init.session.lastConsumedId) }
        : {}),
      [ATTR.cursorHeld]: init.cursor === undefined,
      [ATTR.attempt]: this.attemptNumber,
      ...this.sessionAttributes(),
      ...protocolVersionAttributes(init.protocolVersion),
    });
  }

  get isConcluded(): boolean {
    return this.concluded;
  }

  /** The context to run the resume GET in, so that HTTP spans and injected headers belong to this attempt. */
  get context(): Context {
    return trace.setSpan(context.active(), this.span);
  }

  concludeWithFirstFrame(
    firstId: string | undefined,
    verdict: FirstFrameVerdict | Exclude<CursorlessVerdict, { verdict: 'exposed' }>,
  ): void {
    // `resumed` only when the ids proved continuity; an accepted first frame they cannot vouch for is `unverified`.
    const outcome = verdict.verdict === 'forked' ? 'forked' : verdict.continuityVerified ? 'resumed' : 'unverified';
    if (!this.begin(outcome)) return;
    const now = nowMs();
    const m = this.runtime.instruments;
    const ids = this.runtime.settings.captureEventIds;
    const attrs: Record<string, string | number | boolean> = {
      [ATTR.verdict]: verdict.verdict,
      [ATTR.timeToFirstFrameMs]: Math.round(now - this.startedAt),
    };
    if (ids && firstId !== undefined) attrs[ATTR.firstEventId] = displayEventId(firstId) ?? '';
    if (verdict.codec) attrs[ATTR.codec] = verdict.codec;
    if (verdict.verdict === 'forked') {
      attrs[ATTR.reason] = verdict.reason;
      this.reason = verdict.reason;
    } else {
      attrs[ATTR.continuityVerified] = verdict.continuityVerified;
      if ('clockRegressed' in verdict && verdict.clockRegressed) attrs[ATTR.clockRegressed] = true;
    }
    // The ids skipped between the cursor and the first frame: on a fork after a dropped cursor, the lost events.
    if ('skippedEvents' in verdict && verdict.skippedEvents !== undefined) {
      attrs[ATTR.skippedEvents] = verdict.skippedEvents;
      m.clientResumeSkippedEvents.record(verdict.skippedEvents);
    }
    if (this.init.lostAt !== undefined) {
      const gapSeconds = Math.max(0, (now - this.init.lostAt) / 1000);
      attrs[ATTR.gapSeconds] = gapSeconds;
      m.clientResumeGapSeconds.record(gapSeconds);
    }
    this.finish(attrs);
  }

  /**
   * The client reconnected without the cursor it held (SDK issue #2499): forked before any frame. Right after a
   * resume that got no frame (`afterInconclusive`: the replica answered 200 and went away, or kept quiet), nothing
   * tells whether events were sent in the gap: `cursor_dropped_after_inconclusive`, no fork (the span still names
   * the reason).
   */
  concludeCursorDropped(afterInconclusive: boolean): void {
    if (!this.begin(afterInconclusive ? 'cursor_dropped_after_inconclusive' : 'forked')) return;
    this.reason = 'cursor_dropped';
    this.finish({ [ATTR.verdict]: this.outcome!, [ATTR.reason]: 'cursor_dropped' });
  }

  /**
   * A reconnect without the cursor right after a resume that ended without a frame is not judged at once: the first
   * frame of its stream is, against the dropped cursor (`concludeCursorless`). Until then the attempt is pending;
   * a stream that ends or times out without a frame concludes `cursor_dropped_after_inconclusive` (exposure).
   */
  awaitCursorlessFrame(): void {
    this.judgesCursorless = true;
  }

  /** True while the attempt waits for the first frame of a cursor-less stream. */
  get isCursorless(): boolean {
    return this.judgesCursorless;
  }

  /**
   * The first frame of a cursor-less stream, judged against the dropped cursor (core/verdict.ts): skipped ids never
   * consumed are a fork with their count (proven loss), every id in between consumed is continuity, anything the ids
   * cannot tell stays exposure (`cursor_dropped_after_inconclusive`).
   */
  concludeCursorless(firstId: string | undefined, verdict: CursorlessVerdict): void {
    if (verdict.verdict !== 'exposed') {
      this.concludeWithFirstFrame(firstId, verdict);
      return;
    }
    if (!this.begin('cursor_dropped_after_inconclusive')) return;
    this.reason = 'cursor_dropped';
    const attrs: Record<string, string | number | boolean> = {
      [ATTR.verdict]: 'cursor_dropped_after_inconclusive',
      [ATTR.reason]: 'cursor_dropped',
      [ATTR.timeToFirstFrameMs]: Math.round(nowMs() - this.startedAt),
    };
    if (this.runtime.settings.captureEventIds && firstId !== undefined)
      attrs[ATTR.firstEventId] = displayEventId(firstId) ?? '';
    if (verdict.codec) attrs[ATTR.codec] = verdict.codec;
    this.finish(attrs);
  }

  /** A 409 is what the SDK's servers answer a resume while the stream still has a connection: named apart. */
  concludeRejected(status: number | undefined): void {
    if (!this.begin(status === 409 ? 'rejected_stream_held' : 'rejected')) return;
    this.httpStatus = status;
    this.finish(status !== undefined ? { [ATTR.httpStatusCode]: status } : {});
  }

  concludeFailed(error: unknown): void {
    if (!this.begin('failed')) return;
    recordBoundedException(this.span, error);
    this.finish({ [ATTR.errorType]: errorTypeOf(error) });
  }

  /**
   * No frame before the stream ended or before the verdict timeout, or a body forkwatch cannot read without changing
   * the Response (`unobservable`: a Response that is not the runtime's own): the attempt cannot be judged.
   */
  concludeInconclusive(why: 'stream_ended' | 'timeout' | 'cancelled' | 'unobservable'): void {
    if (this.judgesCursorless) {
      // No frame on the cursor-less stream either: the gap stays unproven.
      if (!this.begin('cursor_dropped_after_inconclusive')) return;
      this.reason = 'cursor_dropped';
      this.finish({ [ATTR.verdict]: 'cursor_dropped_after_inconclusive', [ATTR.reason]: 'cursor_dropped' });
      return;
    }
    if (!this.begin('inconclusive')) return;
    this.inconclusiveReason = why;
    this.finish({ [ATTR.verdict]: 'inconclusive', [ATTR.reason]: why });
  }

  /**
   * True when this attempt got no frame because its stream ended or failed: the replica went away (a restart, a
   * failover). A stream held open past the verdict timeout without a frame (`timeout`) is a live process without
   * the session's log answering with keep-alives: a cursor dropped after it stays a fork.
   */
  endedWithoutFrame(): boolean {
    return this.outcome === 'inconclusive' && this.inconclusiveReason !== 'timeout';
  }

  verdictInfo(firstEventId?: string): ResumeVerdictInfo {
    return {
      side: 'client',
      transport: this.init.transport,
      outcome: this.outcome ?? 'inconclusive',
      ...(this.reason ? { reason: this.reason } : {}),
      cursor: this.init.heldCursor,
      ...(firstEventId !== undefined ? { firstEventId } : {}),
      ...(this.init.sessionId !== undefined ? { sessionId: this.init.sessionId } : {}),
      ...(this.httpStatus !== undefined ? { httpStatus: this.httpStatus } : {}),
    };
  }

  private begin(outcome: ResumeOutcome): boolean {
    if (this.concluded) return false;
    this.concluded = true;
    this.outcome = outcome;
    return true;
  }

  private finish(eventAttributes: Record<string, string | number | boolean>): void {
    const outcome = this.outcome!;
    const transport = this.init.transport;
    const m = this.runtime.instruments;
    m.clientResumes.add(1, { transport, outcome });
    if (outcome === 'forked' && this.reason) m.clientForks.add(1, { transport, reason: this.reason });
    this.span.addEvent(SPAN_EVENT.resumeFirstFrame, { [ATTR.outcome]: outcome, ...eventAttributes });
    this.span.setAttribute(ATTR.outcome, outcome);
    if (this.reason) this.span.setAttribute(ATTR.reason, this.reason);
    if (this.httpStatus !== undefined) this.span.setAttribute(ATTR.httpStatusCode, this.httpStatus);
    const evidence = evidenceOf('client_resume', outcome);
    this.span.setAttribute(ATTR.evidence, evidence);
    if (evidence === 'proven_loss') {
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: `session forked on resume: ${this.reason}` });
    } else if (outcome === 'rejected' || outcome === 'rejected_stream_held' || outcome === 'failed') {
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: `resume ${outcome}` });
    }
    this.span.end();
    // The gap is closed (or known lost); a later resume measures from its own loss.
    this.init.session.lostAt = undefined;
  }

  private baseAttributes() {
    return {
      [ATTR.transport]: this.init.transport,
      ...this.sessionAttributes(),
      ...protocolVersionAttributes(this.init.protocolVersion),
    };
  }

  private sessionAttributes(): Record<string, string> {
    return sessionSpanAttributes(this.init.sessionId, this.runtime.settings.captureRawSessionId);
  }
}
