/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Turning what the probe saw into condition results. */
import { isOversizedKey } from '../../core/event-id';
import { lostByIdOrder, mixedResumes } from './diagnose';
import { failed, result } from './fixes';
import {
  type ConditionName,
  type ConditionResult,
  type ProbeVerdict,
  type ResumeAttempt,
  type StandaloneReport,
  allConditions,
  summarizeResumes,
} from './report';
import type { ResumeTarget } from './resume';
import { isSendableId, quoted } from './server-text';
import type { SseFrame } from './sse-reader';

export interface PingStream {
  /** Condition 1. */
  condition: ConditionResult;
  /** The last id before the response frame: the priming id on 2025-11-25 servers. */
  cursor?: string;
  responseId?: string;
  /** Ids the stream delivered up to and including the cursor. */
  idsUpToCursor: string[];
}

/** Condition 1 from the frames of the ping's SSE stream, the response being the last one. */
export function inspectPingStream(frames: SseFrame[], negotiated: string): PingStream {
  const response = frames[frames.length - 1]!;
  const before = frames.slice(0, -1);
  const primingIndex = before.findIndex(f => !!f.id && f.data.trim() === '');
  let cursorIndex = -1;
  before.forEach((f, i) => {
    if (f.id) cursorIndex = i;
  });
  const cursor = cursorIndex >= 0 ? before[cursorIndex]!.id : undefined;
  const responseId = response.id ? response.id : undefined;
  const idsUpToCursor = before.slice(0, cursorIndex + 1).flatMap(f => (f.id ? [f.id] : []));
  const primingId = primingIndex >= 0 ? before[primingIndex]!.id! : null;
  const evidence = {
    primingId,
    responseId: responseId ?? null,
    frames: frames.map(f => ({ id: f.id === undefined ? null : f.id, data: f.data === '' ? 'empty' : 'message' })),
  };
  const ids = { ...(responseId ? { responseId } : {}), idsUpToCursor };
  const unusable = unusableIds([cursor, responseId], evidence);
  if (unusable !== undefined) return { condition: unusable, ...ids };
  let condition: ConditionResult;
  if (responseId === undefined && cursor === undefined) {
    condition = failed(
      'request.event_ids',
      'no_event_store',
      'no event ids: no priming event and an id-less response, so nothing on the stream can be resumed',
      evidence,
    );
  } else if (responseId === undefined) {
    condition = failed('request.event_ids', 'response_without_id', 'the response frame carries no event id', evidence);
  } else if (negotiated >= '2025-11-25' && primingId === null) {
    const detail = `no priming event on a ${negotiated} stream: a stream lost before its response has no cursor`;
    condition = failed('request.event_ids', 'no_priming_event', detail, evidence);
  } else {
    const priming = primingId ? `priming id ${quoted(primingId, 120)}, ` : '';
    condition = result('pass', `${priming}response id ${quoted(responseId, 120)}`, evidence);
  }
  return { condition, ...(cursor ? { cursor } : {}), ...ids };
}

/**
 * Ids the probe cannot resume from: over the 4096 bytes it keeps of an id (untested), or ids no client can send back
 * in `Last-Event-ID` (a failure: every fetch-based client's resume throws before it leaves).
 */
export function unusableIds(
  ids: readonly (string | undefined)[],
  evidence: Record<string, unknown>,
  key: 'request.event_ids' | 'standalone.event_ids' = 'request.event_ids',
): ConditionResult | undefined {
  const present = ids.filter((id): id is string => id !== undefined && id !== '');
  if (present.some(isOversizedKey))
    return result(
      'not_tested',
      'event ids over 4096 bytes: the probe keeps no more of an id, so it cannot resume from them',
      evidence,
    );
  const bad = present.find(id => !isSendableId(id));
  if (bad === undefined) return undefined;
  const detail = `event id ${quoted(bad, 120)} cannot be sent back in Last-Event-ID (a control character or one beyond Latin-1): no fetch-based client can resume`;
  return failed(key, 'unsendable_ids', detail, { ...evidence, unsendableId: bad });
}
/** POSTs answered with JSON: no request stream to resume; SSE can only come from the standalone GET stream. */
export function withoutPostStreams(): Record<ConditionName, ConditionResult> {
  return allConditions('not_applicable', 'POSTs are answered with JSON (no SSE on request streams): nothing to resume');
}

/**
 * Condition 2 from the first resume, its cause read beside the repeated resumes (another replica's log) and their
 * targets (the SDK example store's id order).
 */
export function replayCondition(
  attempt: ResumeAttempt,
  target: ResumeTarget,
  repeated: { attempts: ResumeAttempt[]; targets: readonly ResumeTarget[] },
): ConditionResult {
  const evidence = { attempt };
  const mixed = mixedResumes(summarizeResumes(repeated.attempts));
  switch (attempt.outcome) {
    case 'resumed':
      return result('pass', `${attempt.status}, ${attempt.detail} (${attempt.ms} ms)`, evidence);
    case 'forked': {
      // Resumes that went both ways, with a fork the id order does not explain: another log. Only without that does
      // a response that sorts before its cursor name the SDK example store.
      const otherLog = mixed !== undefined && !forksByIdOrder(repeated.attempts, repeated.targets);
      const cause = otherLog
        ? 'other_replica'
        : lostByIdOrder(target.cursor, target.responseId)
          ? 'example_store_id_order'
          : mixed !== undefined
            ? 'other_replica'
            : 'replay_missing';
      return failed('request.replay', cause, `a real cursor forked: ${attempt.detail}`, evidence);
    }
    case 'rejected': {
      const cause = mixed !== undefined ? 'other_replica_refuses' : 'cursor_refused';
      return failed('request.replay', cause, `a real cursor was refused: ${attempt.detail}`, evidence);
    }
    default:
      return result('not_tested', attempt.detail, evidence);
  }
}

/** Condition 4 from the K repeated resumes, each with the target it resumed. */
export function repeatedCondition(attempts: ResumeAttempt[], targets: readonly ResumeTarget[]): ConditionResult {
  const summary = summarizeResumes(attempts);
  const { resumed, forked, rejected } = summary.outcomes;
  const n = summary.attempts;
  const statuses = Object.entries(summary.statusCodes)
    .map(([code, count]) => `${code}×${count}`)
    .join(', ');
  const share = n === 0 ? 0 : Math.round((forked / n) * 1000) / 10;
  const detail = `${resumed}/${n} resumed, ${forked} forked (${share}%), ${rejected} refused; statuses ${statuses}`;
  const evidence = { outcomes: summary.outcomes, forkedRatio: summary.forkedRatio, statusCodes: summary.statusCodes };
  if (resumed === n) return result('pass', detail, evidence);
  if (forked === 0 && rejected === 0) return result('not_tested', detail, evidence);
  const cause = forksByIdOrder(attempts, targets)
    ? 'example_store_id_order'
    : forked > 0
      ? resumed > 0
        ? 'other_replica'
        : 'replay_missing'
      : resumed > 0
        ? 'other_replica_refuses'
        : 'cursor_refused';
  return failed('request.repeated_resumes', cause, detail, evidence);
}

/**
 * The SDK example store loses exactly the responses that sort before their cursors: every fork one of those, and no
 * resume that got its response one of those (that store could not have replayed it). A fork that sorts before its
 * cursor by chance (a coin toss when the two share a millisecond) names nothing while another resume refutes it.
 */
function forksByIdOrder(attempts: readonly ResumeAttempt[], targets: readonly ResumeTarget[]): boolean {
  let forks = 0;
  for (const [k, attempt] of attempts.entries()) {
    if (attempt.outcome !== 'forked' && attempt.outcome !== 'resumed') continue;
    const target = targets[k];
    const lost = target !== undefined && lostByIdOrder(target.cursor, target.responseId);
    if (attempt.outcome === 'resumed' ? lost : !lost) return false;
    if (attempt.outcome === 'forked') forks++;
  }
  return forks > 0;
}

export function summarize(
  verdict: ProbeVerdict,
  conditions: Record<ConditionName, ConditionResult>,
  standalone: StandaloneReport,
): string {
  const failed = (kind: string, all: Record<string, ConditionResult>) =>
    Object.keys(all)
      .filter(n => all[n]!.status === 'fail')
      .map(n => `${kind} ${n}`);
  const untested = (all: Record<string, ConditionResult>) =>
    Object.values(all).find(c => c.status === 'not_tested')?.detail;
  switch (verdict) {
    case 'resumable': {
      const kinds = standalone.verdict === 'resumable' ? 'request and standalone streams' : 'request streams';
      return `resumable: resumes of ${kinds} replay the lost events and unknown cursors are refused`;
    }
    case 'not_resumable':
      return `not resumable: ${[...failed('request', conditions), ...failed('standalone', standalone.conditions)].join(', ')} failed`;
    case 'not_applicable':
      return `not applicable: ${conditions.event_ids.detail}; standalone: ${standalone.conditions.event_ids.detail}`;
    default: {
      const request = untested(conditions);
      if (request !== undefined) return `could not test: ${request}`;
      return `could not test the standalone stream: ${untested(standalone.conditions) ?? 'unknown'}`;
    }
  }
}
