/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The continuity verdict on the first frame of a resumed stream.
 *
 * A resume is only lossless when the first event after it continues the session's own log right after the
 * cursor. "HTTP 200" proves nothing; the id of the first frame does. Pure: no I/O, no clocks.
 */
import { isFiniteNumber } from './numbers';
import { type DecodedEventId, type EventIdCodec, detectCodec, lookAlikeOf, safeDecode } from './codecs';

/** Why a resumed stream counts as forked. */
export type ForkReason = 'id_missing' | 'id_regressed' | 'id_reused' | 'stream_changed' | 'cursor_dropped';

export const FORK_REASONS: readonly ForkReason[] = [
  'id_missing',
  'id_regressed',
  'id_reused',
  'stream_changed',
  'cursor_dropped',
];

/**
 * Every way a resume attempt can end. `resumed` means continuity was proven by the ids; `unverified` means the
 * first frame was accepted but its ids could not prove continuity (a stream key shared by every session, opaque
 * ids): it is neither lossless nor a fork, and the client SLO leaves it out of both sides.
 *
 * `rejected_stream_held`: a resume refused 409, which the SDK's servers answer only while the stream being resumed
 * still has a connection there (behind a balancer, the dropped one until the replica's next keep-alive write).
 * `cursor_dropped_after_inconclusive`: a reconnect without the cursor it held (typescript-sdk #2499) right after a
 * resume whose stream ended or failed without a frame (a replica going away, a rolling restart; a stream held open
 * past the verdict timeout stays a fork): the client cannot tell whether anything was sent in the gap, so it is no
 * proven fork; the servers' delivery ledger judges that gap.
 */
export type ResumeOutcome =
  | 'resumed'
  | 'unverified'
  | 'forked'
  | 'rejected'
  | 'failed'
  | 'inconclusive'
  | 'rejected_stream_held'
  | 'cursor_dropped_after_inconclusive';

export const RESUME_OUTCOMES: readonly ResumeOutcome[] = [
  'resumed',
  'unverified',
  'forked',
  'rejected',
  'failed',
  'inconclusive',
  'rejected_stream_held',
  'cursor_dropped_after_inconclusive',
];

export type FirstFrameVerdict =
  | {
      verdict: 'resumed';
      /** False when the ids carried nothing to check order or stream against (opaque ids). */
      continuityVerified: boolean;
      /** Events skipped between the cursor and the first frame, for sequences seen dense (0 = contiguous). */
      skippedEvents?: number;
      /** Set when the ids' embedded clock went backwards: allowed (clocks jump), but worth a look. */
      clockRegressed?: boolean;
      codec?: string;
    }
  | { verdict: 'forked'; reason: ForkReason; codec?: string };

export interface FirstFrameInput {
  /** The Last-Event-ID the client sent. */
  cursor: string;
  /** The id of the first dispatched SSE frame: undefined when it had no id line, '' for an explicit empty id. */
  firstId: string | undefined;
  /** The codec setting; `auto` (or undefined) means: learn the format from the cursor. */
  codec?: EventIdCodec;
  /** True when the id was already consumed on any stream of this session (ids are unique per session). */
  wasConsumed: (id: string) => boolean;
  /**
   * True once the session's live streams were seen to advance by exactly one (core/density.ts): only then does a
   * jump across the resume count as skipped events. A format's `dense` alone is a claim, not evidence.
   */
  sequenceSeenDense?: boolean;
}

export function decideFirstFrame(input: FirstFrameInput): FirstFrameVerdict {
  const { cursor, firstId } = input;
  if (firstId === undefined || firstId === '') return { verdict: 'forked', reason: 'id_missing' };
  if (firstId === cursor) return { verdict: 'forked', reason: 'id_reused' };

  // The codec's reading comes before the consumed-set check: a restarted sequence also reuses ids the session
  // consumed long ago, and "restarted" is the diagnosis on-call needs.
  const codec = input.codec === undefined || input.codec.name === 'auto' ? detectCodec(cursor) : input.codec;
  const before = codec ? safeDecode(codec, cursor) : undefined;
  let decoded: FirstFrameVerdict | undefined;
  if (codec && before) {
    const after = safeDecode(codec, firstId);
    // The cursor is in the codec's format and the first id is not: it comes from another log. A format learned
    // from the cursor's shape alone proves nothing by its absence, nor does a first id that a look-alike format
    // reads on the cursor's own stream (C#'s `…:9` and a hex counter's `…:a`).
    if (after === undefined && !before.learned && !readsOnStream(codec, firstId, before.stream))
      return { verdict: 'forked', reason: 'stream_changed', codec: codec.name };
    decoded =
      after === undefined ? undefined : compareDecoded(before, after, codec.name, input.sequenceSeenDense === true);
    if (decoded?.verdict === 'forked') return decoded;
  }
  if (input.wasConsumed(firstId))
    return { verdict: 'forked', reason: 'id_reused', ...(codec ? { codec: codec.name } : {}) };
  return decoded ?? { verdict: 'resumed', continuityVerified: false, ...(codec ? { codec: codec.name } : {}) };
}

function readsOnStream(codec: EventIdCodec, id: string, stream: string | undefined): boolean {
  const other = lookAlikeOf(codec);
  return stream !== undefined && other !== undefined && safeDecode(other, id)?.stream === stream;
}

function compareDecoded(
  before: DecodedEventId,
  after: DecodedEventId,
  codec: string,
  seenDense: boolean,
): FirstFrameVerdict {
  if (before.learned || after.learned) return compareLearned(before, after, codec);
  let verified = false;
  if (before.stream !== undefined && after.stream !== undefined) {
    if (before.stream !== after.stream) return { verdict: 'forked', reason: 'stream_changed', codec };
    // A stream key shared by every session proves nothing when it matches.
    if (!before.sharedStream) verified = true;
  }
  let skippedEvents: number | undefined;
  if (isFiniteNumber(before.sequence) && isFiniteNumber(after.sequence)) {
    // At or before the cursor: a replay of old events, or a sequence that started again.
    if (after.sequence <= before.sequence) return { verdict: 'forked', reason: 'id_regressed', codec };
    verified = true;
    if (before.dense && after.dense && seenDense) skippedEvents = after.sequence - before.sequence - 1;
  }
  const clockRegressed =
    isFiniteNumber(before.timeMs) && isFiniteNumber(after.timeMs) && after.timeMs < before.timeMs ? true : undefined;
  return {
    verdict: 'resumed',
    continuityVerified: verified,
    ...(skippedEvents !== undefined ? { skippedEvents } : {}),
    ...(clockRegressed ? { clockRegressed } : {}),
    codec,
  };
}

/**
 * A prefix and a number read from the ids' shape: the same prefix and a larger number confirm continuity; anything
 * else is no evidence either way (a random or clock-like suffix goes down as often as up), never a fork.
 */
function compareLearned(before: DecodedEventId, after: DecodedEventId, codec: string): FirstFrameVerdict {
  const ordered =
    before.stream === after.stream &&
    isFiniteNumber(before.sequence) &&
    isFiniteNumber(after.sequence) &&
    after.sequence > before.sequence;
  return { verdict: 'resumed', continuityVerified: ordered, codec };
}

/**
 * The first frame of a stream the client opened without the cursor it held (typescript-sdk #2499), right after a
 * resume that ended without a frame. No replay can come on such a stream, so the frame is judged against the
 * dropped cursor (the stream's last consumed id): `forked` with a count when the ids prove events were skipped,
 * `resumed` when they prove none were, `exposed` when they cannot tell (the SDK's time-and-random ids, a numbering
 * not learned dense). A regression, a reused id or a foreign format is a fork as on any resume.
 */
export type CursorlessVerdict =
  | { verdict: 'forked'; reason: ForkReason; skippedEvents?: number; codec?: string }
  | { verdict: 'resumed'; continuityVerified: true; skippedEvents: 0; codec?: string }
  | { verdict: 'exposed'; codec?: string };

/** Gaps wider than this are not walked id by id: the session's ring of consumed ids is smaller anyway. */
export const CURSORLESS_GAP_LIMIT = 10_000;

export interface CursorlessInput extends FirstFrameInput {
  /** The cursor the client held and did not send. */
  cursor: string;
}

export function decideCursorlessFirstFrame(input: CursorlessInput): CursorlessVerdict {
  const base = decideFirstFrame(input);
  if (base.verdict === 'forked') return base;
  const codecName = base.codec !== undefined ? { codec: base.codec } : {};
  if (base.skippedEvents === undefined || input.firstId === undefined) return { verdict: 'exposed', ...codecName };
  const skipped = unconsumedInGap(input, base.skippedEvents);
  if (skipped === undefined) return { verdict: 'exposed', ...codecName };
  if (skipped === 0) return { verdict: 'resumed', continuityVerified: true, skippedEvents: 0, ...codecName };
  return { verdict: 'forked', reason: 'cursor_dropped', skippedEvents: skipped, ...codecName };
}

/**
 * The ids between the cursor and the first frame that the session never consumed on any stream. A counter shared by
 * a session's streams (deploy's Redis store: one INCR for POST and GET events) puts the POST streams' ids in a
 * lossless gap of the GET stream; those were consumed, so they are not skipped. Ids without a stream key are
 * re-encoded as the integers they are; a format with a stream key numbers each stream on its own (the codec's
 * `dense`), so its gap is skipped as it stands. Undefined when the gap is too wide to walk.
 */
function unconsumedInGap(input: CursorlessInput, gap: number): number | undefined {
  if (gap === 0) return 0;
  const codec = input.codec === undefined || input.codec.name === 'auto' ? detectCodec(input.cursor) : input.codec;
  const before = codec ? safeDecode(codec, input.cursor) : undefined;
  if (!codec || !before || !isFiniteNumber(before.sequence)) return undefined;
  if (before.stream !== undefined) return gap;
  if (gap > CURSORLESS_GAP_LIMIT) return undefined;
  let unconsumed = 0;
  for (let n = before.sequence + 1; n <= before.sequence + gap; n++) {
    const id = String(n);
    const decoded = safeDecode(codec, id);
    // An id the codec would not write this way cannot be looked up: no proof either way.
    if (decoded?.sequence !== n || decoded.stream !== undefined) return undefined;
    if (!input.wasConsumed(id)) unconsumed++;
  }
  return unconsumed;
}
