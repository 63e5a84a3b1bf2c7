/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Whether a session's event numbering is dense, learned from its live streams instead of assumed from the format.
 *
 * A codec's `dense` only says the format *can* be a per-stream counter. A server numbering every event with one
 * global counter (mcp-persist's Redis INCR, a per-session counter shared by its streams) writes the same integers,
 * but the ids of one stream jump by the events of other streams or sessions: counting those jumps across a resume
 * as skipped events reports gaps that lost nothing. So skipped events are claimed only once consecutive events on
 * one connection were seen to advance by exactly one, and never once a live connection was seen to jump.
 */
import { type DecodedEventId, type EventIdCodec, detectCodec, mayReadDense, safeDecode } from './codecs';
import { isFiniteNumber } from './numbers';

/**
 * `unseen`: no two consecutive events of a dense-format stream seen yet; `dense`: a live step of exactly one seen,
 * and no larger one; `sparse`: a live connection jumped (final: a global counter can also step by one at times).
 */
export type SequenceDensity = 'unseen' | 'dense' | 'sparse';

/** The evidence one step between consecutive events of one connection adds to what was known. */
export function learnDensity(known: SequenceDensity, step: number): SequenceDensity {
  if (known === 'sparse') return known;
  if (step > 1) return 'sparse';
  // A step of 0 or below on a live connection is a duplicate or a replay, not evidence about the numbering.
  return step === 1 ? 'dense' : known;
}

/**
 * Ids a live connection skipped that count as a gap: a step past one on a stream whose numbering was seen dense, in
 * a format whose ids name their stream (a per-stream counter: go-sdk, rmcp, C#, `<stream>:<hex>`). Exposure, not
 * proof: the events may have gone to a process this stream no longer reads (a split brain behind a shared store),
 * or the numbering only looked dense. A format without a stream key (bare integers) is left out: one counter shared
 * by a session's streams jumps on every stream but the busiest, and its gaps would be healthy traffic's.
 */
export function liveGapOf(known: SequenceDensity, step: number, streamKeyed: boolean): number {
  return known === 'dense' && streamKeyed && step > 1 ? step - 1 : 0;
}

/**
 * Follows the ids of one connection, in order. The codec is picked once, from the connection's first id (`auto`
 * detects it then); a format without a dense sequence ends the watch, so most connections decode one id only.
 */
export class DensityWatch {
  private codec: EventIdCodec | undefined = undefined;
  private previous: DecodedEventId | undefined = undefined;
  private done = false;
  /** Ids skipped by the last step, when they count as a gap (liveGapOf); read once by takeGap. */
  private gap = 0;

  /** The ids the last observed step skipped on a stream seen dense (see liveGapOf), then 0 until the next gap. */
  takeGap(): number {
    const gap = this.gap;
    this.gap = 0;
    return gap;
  }

  constructor(private readonly setting: EventIdCodec | undefined) {}

  /** The session's density after the connection delivered `id`. */
  observe(id: string, known: SequenceDensity): SequenceDensity {
    if (this.done || known === 'sparse') return known;
    if (this.codec === undefined) {
      const auto = this.setting === undefined || this.setting.name === 'auto';
      // No dense format reads the id: whichever codec `auto` detects, the watch would stop here.
      if (auto && !mayReadDense(id)) return this.stop(known);
      const codec = auto ? detectCodec(id) : this.setting;
      if (codec === undefined) return this.stop(known);
      this.codec = codec;
    }
    const decoded = safeDecode(this.codec, id);
    if (!decoded?.dense || !isFiniteNumber(decoded.sequence)) return this.stop(known);
    const previous = this.previous;
    this.previous = decoded;
    // Another stream key on the same connection (a format that encodes it): no step to compare.
    if (previous === undefined || previous.stream !== decoded.stream) return known;
    const step = decoded.sequence - (previous.sequence as number);
    this.gap = liveGapOf(known, step, decoded.stream !== undefined);
    return learnDensity(known, step);
  }

  private stop(known: SequenceDensity): SequenceDensity {
    this.done = true;
    this.previous = undefined;
    return known;
  }
}
