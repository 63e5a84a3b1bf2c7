/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The resumed standalone stream judged: does it replay what was sent while away (on proof only: ids that continue
 * the cursor or were stamped while away, or the probe's own markers), and does it go on carrying new events? A
 * failure names the cause the evidence supports (diagnose.ts): the SDK example store's `_GET_stream_` ids, another
 * replica, or a server that does not replay.
 */
import { detectCodec, safeDecode } from '../../core/codecs';
import { isFiniteNumber } from '../../core/numbers';
import { decideFirstFrame } from '../../core/verdict';
import { sdkStandaloneShaped } from './diagnose';
import { failed, result } from './fixes';
import { isJsonRpcMessage, markerOf } from './markers';
import type { McpHttp } from './mcp-http';
import type { ConditionResult } from './report';
import { shownId } from './resume';
import type { SseRead } from './sse-reader';
import type { StandaloneStream } from './standalone-stream';
import type { Trigger } from './triggers';

/** What the probe knows about the deployment when a condition fails. */
export interface Diagnosis {
  cursor: string;
  /** Something showed more than one log or process: request resumes that went both ways, trigger calls lost. */
  replicas: boolean;
  /** The first resume replayed what was sent while away: the store keys this stream's events right. */
  replayed?: boolean;
}

/**
 * The SDK example store's `_GET_stream_` bug explains a failure only where its ids are that store's and no resume
 * replayed: a store that replayed keys the stream's events right, whatever its ids look like.
 */
export function exampleStoreGetStream(diagnosis: Diagnosis): boolean {
  return sdkStandaloneShaped(diagnosis.cursor) && diagnosis.replayed !== true;
}

/**
 * What can prove a replay: the cursor and ids consumed before it (a codec's reading), the probe's markers, and when
 * the cursor was read and the resume sent (for ids that carry the time they were stored).
 */
export interface ReplayProof {
  cursor: string;
  consumed: ReadonlySet<string>;
  markers: ReadonlySet<string> | undefined;
  cursorReadAt: number | undefined;
  resumeSentAt: number;
}

/**
 * An id stamped (by the server's clock) after the cursor and before the resume was sent was stored while the probe
 * was away: delivering it first is a replay. The server's clock is compared with its own cursor, never with the
 * probe's: the cursor was stored before the probe read it, so the server's clock runs at least `cursor stamp - read
 * time` ahead of the probe's, and a stamp under `cursor stamp + (resume sent - cursor read)` predates the resume.
 * Events a fresh log makes after the resume arrived are stamped later. Undefined when the ids carry no time.
 */
export function storedWhileAway(
  id: string | undefined,
  { cursor, consumed, cursorReadAt, resumeSentAt }: Omit<ReplayProof, 'markers'>,
): { afterCursorMs: number; beforeResumeMs: number } | undefined {
  if (id === undefined || id === '' || consumed.has(id) || cursorReadAt === undefined) return undefined;
  const codec = detectCodec(cursor);
  const before = codec ? safeDecode(codec, cursor) : undefined;
  const after = codec ? safeDecode(codec, id) : undefined;
  if (!isFiniteNumber(before?.timeMs) || !isFiniteNumber(after?.timeMs) || before.stream !== after.stream)
    return undefined;
  const resumeByServerClock = before.timeMs + (resumeSentAt - cursorReadAt);
  if (after.timeMs < before.timeMs || after.timeMs >= resumeByServerClock) return undefined;
  return { afterCursorMs: after.timeMs - before.timeMs, beforeResumeMs: resumeByServerClock - after.timeMs };
}

/** Nothing replayed, or not what was sent while away: which cause that is. */
function lostCause(diagnosis: Diagnosis) {
  if (exampleStoreGetStream(diagnosis)) return 'example_store_get_stream' as const;
  return diagnosis.replicas ? ('other_replica' as const) : ('replay_missing' as const);
}

/** A read that ended without a frame: a trickle or a stream past a limit is untested, silence or an end a failure. */
function withoutFrame(
  read: Exclude<SseRead, { kind: 'frame' }>,
  waited: string,
  diagnosis: Diagnosis,
): ConditionResult {
  if (read.kind === 'timeout' && read.midFrame)
    return result('not_tested', `a frame was still arriving after ${waited}: too slow to judge`);
  if (read.kind === 'error' && read.oversized) return result('not_tested', `the resumed stream sent ${read.error}`);
  if (read.kind === 'timeout')
    return failed(
      'standalone.replay',
      lostCause(diagnosis),
      `answered 200 but replayed nothing within ${waited}: the events sent while away are lost`,
      { cursor: diagnosis.cursor, waited },
    );
  const how = read.kind === 'eof' ? 'ended' : `broke (${read.error})`;
  const evidence = { cursor: diagnosis.cursor, waited };
  return failed('standalone.replay', 'resumed_stream_ended', `the stream ${how} before any replay`, evidence);
}

/**
 * A replay passes only on proof: the first id continues the cursor by the codec's reading, or the events the probe
 * made while away arrive on the resumed stream. Events that merely arrive prove nothing: a server with live
 * traffic puts them on a fresh stream too. A frame that is no JSON-RPC message replays nothing.
 */
export async function judgeReplay(
  read: SseRead,
  proof: ReplayProof,
  stream: StandaloneStream,
  http: McpHttp,
  diagnosis: Diagnosis,
): Promise<ConditionResult> {
  const { cursor, consumed, markers } = proof;
  const waited = `${http.budget.owedFrameMs()} ms (${stream.comments} keep-alive comments, ${stream.bytes} bytes)`;
  if (read.kind !== 'frame') return withoutFrame(read, waited, diagnosis);
  const first = read.frame;
  const evidence = { cursor, firstEventId: first.id ?? null };
  if (!isJsonRpcMessage(first.data))
    return failed(
      'standalone.replay',
      'not_json_rpc',
      `the first frame (${shownId(first.id)}) is no JSON-RPC message`,
      evidence,
    );
  const verdict = decideFirstFrame({ cursor, firstId: first.id, wasConsumed: id => consumed.has(id) });
  if (verdict.verdict === 'forked') {
    const detail = `first frame (${shownId(first.id)}) does not continue the cursor's log: ${verdict.reason}`;
    return failed('standalone.replay', lostCause(diagnosis), detail, { ...evidence, reason: verdict.reason });
  }
  if (verdict.verdict === 'resumed' && verdict.continuityVerified)
    return result(
      'pass',
      `replayed an event sent while away first (${shownId(first.id)}; its id continues the cursor)`,
    );
  const stamped = storedWhileAway(first.id, proof);
  if (stamped !== undefined)
    return result(
      'pass',
      `replayed an event stored while away first (${shownId(first.id)}: stamped ${stamped.afterCursorMs} ms after the cursor, ${stamped.beforeResumeMs} ms or more before the resume was sent)`,
      { proof: 'time', ...stamped },
    );
  if (markers === undefined || markers.size === 0)
    return result(
      'not_tested',
      `events arrived (first ${shownId(first.id)}), but their ids do not show that they continue the cursor or were stored while away, and the probe cannot tell the events it made while away from live ones`,
    );
  return findMarker(first, markers, stream, http, diagnosis);
}

/** Replayed events may begin with live ones the server sent while away too: read on to the first marker. */
async function findMarker(
  first: { id: string | undefined; data: string },
  markers: ReadonlySet<string>,
  stream: StandaloneStream,
  http: McpHttp,
  diagnosis: Diagnosis,
): Promise<ConditionResult> {
  const seen: string[] = [];
  // One deadline for the whole replay: live events keep coming, each would restart a per-read one.
  const deadline = http.frameDeadline();
  for (let frame = first; ; ) {
    const marker = markerOf(frame);
    if (marker !== undefined && markers.has(marker))
      return result(
        'pass',
        `the events the probe made while away were replayed (${shownId(frame.id)}, after ${seen.length} other event(s)); the ids (${shownId(first.id)} first) prove no order`,
      );
    seen.push(shownId(frame.id));
    const next = await stream.nextMessage(deadline);
    if (next.kind !== 'frame')
      return failed(
        'standalone.replay',
        lostCause(diagnosis),
        `${seen.length} event(s) arrived on the resumed stream, none of the events the probe made while away, and their ids prove no continuation of the cursor: live events on a stream that lost what was sent while away`,
        { arrived: seen.slice(0, 20) },
      );
    frame = next.frame;
  }
}

/** ROUNDS events made after the resume, each over a new connection (another replica may make it). */
export const ROUNDS = 2;

/** Events sent after the resume must arrive on the resumed stream. */
export async function continues(
  http: McpHttp,
  stream: StandaloneStream,
  trigger: Trigger,
  diagnosis: Diagnosis,
): Promise<ConditionResult> {
  const arrived: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const why = await trigger.fire();
    if (why !== undefined) return result('not_tested', `${trigger.describe} after the resume: ${why}`);
    const next = await stream.nextMessage(http.frameDeadline());
    const evidence = { cursor: diagnosis.cursor, arrived, round };
    if (next.kind === 'frame' && !isJsonRpcMessage(next.frame.data))
      return failed(
        'standalone.continues',
        'not_json_rpc',
        `event ${round} after the resume is no JSON-RPC message`,
        evidence,
      );
    if (next.kind === 'frame') {
      arrived.push(shownId(next.frame.id));
      // The rest of the burst, so that the next round waits for its own event.
      await stream.drain(http.deadline());
      continue;
    }
    const waited = `${http.budget.owedFrameMs()} ms`;
    if (next.kind === 'timeout' && next.midFrame)
      return result(
        'not_tested',
        `event ${round} after the resume was still arriving after ${waited}: too slow to judge`,
      );
    if (next.kind === 'error' && next.oversized) return result('not_tested', `the resumed stream sent ${next.error}`);
    if (next.kind !== 'timeout') {
      const how = next.kind === 'eof' ? 'ended' : `broke (${next.error})`;
      return failed(
        'standalone.continues',
        'resumed_stream_ended',
        `the resumed stream ${how} before event ${round} of ${ROUNDS} arrived`,
        evidence,
      );
    }
    const cause = exampleStoreGetStream(diagnosis)
      ? 'example_store_get_stream'
      : diagnosis.replicas
        ? 'no_affinity_stream'
        : 'resumed_stream_silent';
    const detail = `event ${round} of ${ROUNDS} sent after the resume (${trigger.describe}) never arrived on the resumed stream within ${waited}: the server (or the replica that sent it) does not write to this stream, so notifications are lost until the client reconnects`;
    return failed('standalone.continues', cause, detail, evidence);
  }
  return result('pass', `${ROUNDS} events sent after the resume arrived on it (${arrived.join(', ')})`);
}
