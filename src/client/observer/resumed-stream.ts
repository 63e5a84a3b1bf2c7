/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The resumed-stream observer, one per SSE stream a client opens, shared by the streamable HTTP class patch
 * (client/patches/streamable-http-client.ts), the wire observer (client/wire/) and the legacy SSE patch
 * (client/patches/sse-client.ts), so all three judge a first frame, a stream without one, a duplicate and a fork the same way.
 *
 * Its verdict is pending from the resume until the first frame, the stream's end, a cancel or the verdict timeout,
 * whichever comes first, and is concluded exactly once. A fork runs the user's hook; what else the client is told
 * in fail-loud mode is the one thing that differs per client, its `ForkReport`.
 *
 * The observer is itself the frame hooks and the gate of the observed body (observed-stream.ts): nothing is
 * allocated per frame.
 */
import { clearTimeout, setTimeout } from 'node:timers';
import { DensityWatch } from '../../core/density';
import { eventIdKey } from '../../core/event-id';
import type { SessionRecord } from '../../core/ledger';
import {
  type CursorlessVerdict,
  type FirstFrameInput,
  decideCursorlessFirstFrame,
  decideFirstFrame,
} from '../../core/verdict';
import type { ClientTransportLabel } from '../../shared/names';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import type { ResumeVerdictInfo } from '../../shared/types';
import { type StreamGate, type StreamObserverHooks, observeStream } from './observed-stream';
import type { ResumeAttempt } from './resume-attempt';

/**
 * How fail-loud mode tells this client of a fork, after the user's hook ran. Returns the error its stream ends with
 * (undefined: the stream ends cleanly). Without one, a fork is reported through the hook only.
 */
export type ForkReport = (info: ResumeVerdictInfo) => unknown;

/** Where a client keeps the stream that ended last (the streamable patch reads it when the SDK reconnects). */
export interface EndedStreamSink {
  lastEnded: ResumedStream | undefined;
}

export interface ResumedStreamInit {
  /** The resume attempt this stream answers; undefined for a fresh stream (only duplicates are counted). */
  attempt: ResumeAttempt | undefined;
  session: SessionRecord;
  transport: ClientTransportLabel;
  /** Last-Event-ID the stream was opened with. */
  cursor: string | undefined;
  reportFork: ForkReport | undefined;
  endedInto?: EndedStreamSink;
  /**
   * The client reports each event it takes in (`onClientEvent`: the SDK's own `onresumptiontoken`), so the body's
   * frames are needed only for the first-frame verdict, and the body only while one is pending.
   */
  idsFromClient?: boolean;
  /** The stream took in its first event (ends a run of empty reconnects: reconnect-storms.ts). */
  onFirstEvent?: () => void;
}

/**
 * How long a cursor-less stream's first frame waits before ids skipped in its gap count as lost: a counter shared by
 * the session's streams (deploy's Redis store) puts a POST stream's ids in the gap, and that stream's frames can
 * reach the client a moment after the GET stream's first one.
 */
export const CURSORLESS_SETTLE_MS = 250;

/** Metric attributes per transport, shared: nothing allocated per event. */
const TRANSPORT_ATTRS: Readonly<Record<ClientTransportLabel, { transport: ClientTransportLabel }>> = {
  streamable_http: { transport: 'streamable_http' },
  sse: { transport: 'sse' },
};

export class ResumedStream implements StreamObserverHooks, StreamGate {
  /** Last id seen on the stream: what the SDK would resume from. */
  lastId: string | undefined = undefined;
  readonly openedAt = nowMs();
  endedAt: number | undefined = undefined;
  private pending: boolean;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  private isCut = false;
  private forkError: unknown = undefined;
  /** Fail-loud mode, as it was when the stream opened. */
  private readonly failsLoud: boolean;
  /** When the chunk being read arrived: the time of its frames (one clock read per chunk, not per frame). */
  private chunkAt = 0;
  /** The steps between this connection's consecutive ids: what they show of the session's numbering. */
  private readonly density: DensityWatch;

  constructor(
    private readonly init: ResumedStreamInit,
    private readonly runtime: ForkwatchRuntime,
  ) {
    this.pending = init.attempt !== undefined && !init.attempt.isConcluded;
    this.failsLoud = runtime.settings.onFork === 'abort';
    this.density = new DensityWatch(runtime.settings.codec);
  }

  get cursor(): string | undefined {
    return this.init.cursor;
  }

  /** The resume attempt this stream answered, if it was one. */
  get attempt(): ResumeAttempt | undefined {
    return this.init.attempt;
  }

  /** True until the verdict is taken: fail-loud mode holds frames back while it is. */
  get isPending(): boolean {
    return this.pending;
  }

  /**
   * Whether the body must be observed: always, unless the client reports its events itself; then only for a verdict
   * (pending), or to cut a stream whose attempt forked already (fail-loud mode).
   */
  get needsBody(): boolean {
    return !this.init.idsFromClient || this.pending || this.cutsAtOnce;
  }

  /** Fail-loud mode and a resume already forked (its cursor dropped): the stream is cut before any frame. */
  private get cutsAtOnce(): boolean {
    return this.failsLoud && this.init.attempt?.outcome === 'forked';
  }

  /**
   * Observes a response body: every frame is seen before the client's parser, the first decides the verdict. In
   * fail-loud mode a stream whose attempt is already forked (its cursor dropped) is cut at once.
   */
  observe(body: ReadableStream<Uint8Array>, kind: 'default' | 'response' = 'default'): ReadableStream<Uint8Array> {
    if (this.cutsAtOnce) this.isCut = true;
    const observed = observeStream(
      body,
      this,
      this,
      error => this.runtime.diag.error('SSE frame observer failed', error),
      kind,
    );
    this.armTimeout(() => observed.release());
    if (this.isCut) observed.cutNow(new Error('forkwatch: resumed without its cursor (fail-loud mode)'));
    return observed.readable;
  }

  onChunk(): void {
    this.chunkAt = nowMs();
  }

  onFrame(id: string | undefined): void {
    this.firstFrame(id);
    // A frame withheld in fail-loud mode never reached the application: it was not consumed.
    if (this.isCut || !id || this.init.idsFromClient) return;
    if (this.lastId === undefined) this.init.onFirstEvent?.();
    this.lastId = id;
    this.consume(id, this.chunkAt);
  }

  /** Past the verdict, a client that reports its own events needs no more frames. */
  wantsFrames(): boolean {
    return !this.init.idsFromClient || this.pending;
  }

  /** The client took in an event with this id (called by the SDK, after its parser, before the app sees it). */
  onClientEvent(id: unknown): void {
    if (this.isCut || typeof id !== 'string' || id === '') return;
    if (this.lastId === undefined) this.init.onFirstEvent?.();
    this.lastId = id;
    this.consume(id, nowMs());
  }

  onEnd(): void {
    this.endedAt = nowMs();
    this.init.session.lostAt = this.endedAt;
    if (this.init.endedInto) this.init.endedInto.lastEnded = this;
    this.endWithoutFrame('stream_ended');
  }

  onCancel(): void {
    this.endWithoutFrame('cancelled');
  }

  holding(): boolean {
    return this.failsLoud && this.pending;
  }

  cut(): boolean {
    return this.isCut;
  }

  cutError(): unknown {
    return this.forkError;
  }

  /** The stream's first frame decides the verdict; a fork is reported. Later frames do nothing. */
  firstFrame(id: string | undefined): void {
    const attempt = this.take();
    if (!attempt) return;
    const session = this.init.session;
    const input: FirstFrameInput = {
      cursor: attempt.init.heldCursor,
      firstId: id === undefined || id === '' ? id : eventIdKey(id),
      codec: this.runtime.settings.codec,
      wasConsumed: candidate => session.hasConsumed(candidate),
      sequenceSeenDense: session.density === 'dense',
    };
    if (attempt.isCursorless) {
      this.judgeCursorless(attempt, id, input);
      return;
    }
    const verdict = decideFirstFrame(input);
    attempt.concludeWithFirstFrame(id, verdict);
    if (verdict.verdict === 'forked') this.reportFork(attempt, id);
  }

  /**
   * The first frame of a stream opened without the cursor the client held: judged against that cursor. Ids skipped
   * in the gap are judged again after CURSORLESS_SETTLE_MS, once the session's other streams delivered theirs.
   */
  private judgeCursorless(attempt: ResumeAttempt, id: string | undefined, input: FirstFrameInput): void {
    const conclude = (verdict: CursorlessVerdict) => {
      attempt.concludeCursorless(id, verdict);
      if (verdict.verdict === 'forked') this.reportFork(attempt, id);
    };
    const verdict = decideCursorlessFirstFrame(input);
    if (verdict.verdict !== 'forked' || verdict.skippedEvents === undefined) {
      conclude(verdict);
      return;
    }
    // By then the frame itself was consumed: only the ids in the gap are asked about.
    const later: FirstFrameInput = {
      ...input,
      wasConsumed: candidate => candidate !== input.firstId && input.wasConsumed(candidate),
    };
    const timer = setTimeout(() => {
      try {
        conclude(decideCursorlessFirstFrame(later));
      } catch (error) {
        this.runtime.diag.error('judging a cursor-less reconnect failed', error);
      }
    }, CURSORLESS_SETTLE_MS);
    // Never keep the host process alive for a verdict.
    timer.unref?.();
  }

  private reportFork(attempt: ResumeAttempt, id: string | undefined): void {
    const info = attempt.verdictInfo(id);
    this.runtime.notifyFork(info);
    if (!this.failsLoud || !this.init.reportFork) return;
    this.isCut = true;
    this.forkError = this.init.reportFork(info);
  }

  /**
   * An event reached the application: a second delivery of one id in the session is a duplicate, and ids skipped
   * on a stream seen dense are a live gap (core/density.ts: exposure, at most once a session, since the session's
   * numbering is sparse from then on).
   */
  consume(id: string, now: number): void {
    const session = this.init.session;
    session.density = this.density.observe(id, session.density);
    if (this.density.takeGap() > 0) {
      this.runtime.instruments.clientLiveGaps.add(1, TRANSPORT_ATTRS[this.init.transport]);
    }
    if (session.consume(eventIdKey(id), now)) {
      this.runtime.instruments.clientDuplicateEvents.add(1, TRANSPORT_ATTRS[this.init.transport]);
    }
  }

  /** The stream ended or was cancelled before its first frame. */
  endWithoutFrame(why: 'stream_ended' | 'cancelled'): void {
    this.take()?.concludeInconclusive(why);
    this.stopTimer();
  }

  /** Concludes `timeout` when no frame came within the verdict timeout; `onTimeout` then releases held frames. */
  armTimeout(onTimeout: () => void): void {
    if (!this.pending) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const attempt = this.take();
      if (!attempt) return;
      attempt.concludeInconclusive('timeout');
      onTimeout();
    }, this.runtime.settings.verdictTimeoutMs);
    // Never keep the host process alive for a verdict.
    this.timer.unref?.();
  }

  /** Stops the verdict timer without concluding (a newer connection took over). */
  stopTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private take(): ResumeAttempt | undefined {
    if (!this.pending || !this.init.attempt) return undefined;
    this.pending = false;
    this.stopTimer();
    return this.init.attempt;
  }
}
