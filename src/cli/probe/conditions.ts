/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Turning what the probe saw into condition results. */
import { displayEventId } from '../../core/event-id';
import type { McpHttp } from './mcp-http';
import {
  type ConditionName,
  type ConditionResult,
  type ProbeVerdict,
  type ResumeAttempt,
  type StandaloneReport,
  allConditions,
  summarizeResumes,
} from './report';
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
  const result = (status: ConditionResult['status'], detail: string) => ({ status, detail, evidence });

  let condition: ConditionResult;
  if (responseId === undefined && cursor === undefined) {
    condition = result(
      'fail',
      'no event ids: no priming event and an id-less response, so nothing on the stream can be resumed',
    );
  } else if (responseId === undefined) {
    condition = result('fail', 'the response frame carries no event id');
  } else if (negotiated >= '2025-11-25' && primingId === null) {
    condition = result(
      'fail',
      `no priming event on a ${negotiated} stream: a stream lost before its response has no cursor`,
    );
  } else {
    const priming = primingId ? `priming id ${displayEventId(primingId)}, ` : '';
    condition = result('pass', `${priming}response id ${displayEventId(responseId)}`);
  }
  return { condition, ...(cursor ? { cursor } : {}), ...(responseId ? { responseId } : {}), idsUpToCursor };
}

/** POSTs answered with JSON: no request stream to resume; SSE can only come from the standalone GET stream. */
export function withoutPostStreams(): Record<ConditionName, ConditionResult> {
  return allConditions('not_applicable', 'POSTs are answered with JSON (no SSE on request streams): nothing to resume');
}

/** Condition 2 from the first resume. */
export function replayCondition(attempt: ResumeAttempt): ConditionResult {
  const evidence = { attempt };
  switch (attempt.outcome) {
    case 'resumed':
      return { status: 'pass', detail: `${attempt.status}, ${attempt.detail} (${attempt.ms} ms)`, evidence };
    case 'forked':
      return { status: 'fail', detail: `a real cursor forked: ${attempt.detail}`, evidence };
    case 'rejected':
      return { status: 'fail', detail: `a real cursor was refused: ${attempt.detail}`, evidence };
    default:
      return { status: 'not_tested', detail: attempt.detail, evidence };
  }
}

/** Condition 4 from the K repeated resumes. */
export function repeatedCondition(attempts: ResumeAttempt[]): ConditionResult {
  const summary = summarizeResumes(attempts);
  const { resumed, forked, rejected } = summary.outcomes;
  const n = summary.attempts;
  const statuses = Object.entries(summary.statusCodes)
    .map(([code, count]) => `${code}×${count}`)
    .join(', ');
  const share = n === 0 ? 0 : Math.round((forked / n) * 1000) / 10;
  const detail = `${resumed}/${n} resumed, ${forked} forked (${share}%), ${rejected} refused; statuses ${statuses}`;
  const evidence = { outcomes: summary.outcomes, forkedRatio: summary.forkedRatio, statusCodes: summary.statusCodes };
  if (resumed === n) return { status: 'pass', detail, evidence };
  if (forked > 0 || rejected > 0) return { status: 'fail', detail, evidence };
  return { status: 'not_tested', detail, evidence };
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
