/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** What `forkwatch probe` found: the conditions it checks, the overall verdict and its exit code. */
import { RESUME_OUTCOMES, type ForkReason, type ResumeOutcome as ClientResumeOutcome } from '../../core/verdict';
import type { StepRecord } from './mcp-http';

/**
 * The probe's own resume outcomes: the client's, but for the two a probe never gives (it retries its own 409s, and it
 * never reconnects without its cursor), so its report and metrics keep their shape.
 */
export type ResumeOutcome = Exclude<ClientResumeOutcome, 'rejected_stream_held' | 'cursor_dropped_after_inconclusive'>;
export const PROBE_RESUME_OUTCOMES = RESUME_OUTCOMES.filter(
  (o): o is ResumeOutcome => o !== 'rejected_stream_held' && o !== 'cursor_dropped_after_inconclusive',
);

export const CONDITIONS = ['event_ids', 'replay', 'bogus_cursor_refused', 'repeated_resumes'] as const;
export type ConditionName = (typeof CONDITIONS)[number];

export const CONDITION_TITLES: Record<ConditionName, string> = {
  event_ids: 'event ids on SSE streams',
  replay: 'resume replays from the cursor',
  bogus_cursor_refused: 'unknown cursor refused',
  repeated_resumes: 'repeated resumes',
};

/**
 * The kinds of SSE stream a session uses: `request`, the response stream of a POST (condition names above), and
 * `standalone`, the GET stream that carries server-initiated messages (logging, list_changed, server requests).
 */
export const STREAM_KINDS = ['request', 'standalone'] as const;
export type StreamKind = (typeof STREAM_KINDS)[number];

export const STANDALONE_CONDITIONS = [
  'event_ids',
  'cursor_accepted',
  'replay',
  'continues',
  'bogus_cursor_refused',
  'repeated_resumes',
] as const;
export type StandaloneConditionName = (typeof STANDALONE_CONDITIONS)[number];

export const STANDALONE_CONDITION_TITLES: Record<StandaloneConditionName, string> = {
  event_ids: 'event ids on the GET stream',
  cursor_accepted: "the server's own cursor accepted",
  replay: 'events sent while away replayed',
  continues: 'the resumed stream continues',
  bogus_cursor_refused: 'unknown cursor refused',
  repeated_resumes: 'repeated resumes',
};

/** The conditions of each stream kind, in report order. */
export const STREAM_CONDITIONS: Record<StreamKind, readonly string[]> = {
  request: CONDITIONS,
  standalone: STANDALONE_CONDITIONS,
};

/** How the probe got the server to send on the standalone stream (null: it could not). */
export type StandaloneTrigger = 'priming' | 'notify_tool' | 'roots_list_changed' | 'unprompted';

export interface StandaloneReport {
  verdict: ProbeVerdict;
  conditions: Record<StandaloneConditionName, ConditionResult>;
  cursor: { real: string | null; source: 'priming' | 'event' | null; bogus: string | null };
  /** What made the server send on the stream; null when nothing did. */
  trigger: StandaloneTrigger | null;
  /** What the probe tried to make the server send. */
  tried: string[];
  resumes: ResumeSummary;
  /** What the probe noticed on this stream that is not a condition (a balancer holding closed connections). */
  notes: string[];
}

/** `not_tested`: the probe could not decide (a step failed or a prerequisite was missing). */
export type ConditionStatus = 'pass' | 'fail' | 'not_tested' | 'not_applicable';

export interface ConditionResult {
  status: ConditionStatus;
  /** One line, for people. */
  detail: string;
  /** What the probe saw that decided it (always on a failure). */
  evidence?: Record<string, unknown>;
  /** On a failure: why, one of the causes of fixes.ts. */
  cause?: string;
  /** On a failure: the remedy, one line (fixes.ts). */
  fix?: string;
}

export type ProbeVerdict = 'resumable' | 'not_resumable' | 'untestable' | 'not_applicable';

export const VERDICTS: readonly ProbeVerdict[] = ['resumable', 'not_resumable', 'untestable', 'not_applicable'];

/** 0 resumable, 1 not resumable, 2 could not test; not applicable is "nothing to test". Usage errors: USAGE_ERROR. */
export const EXIT_CODES: Record<ProbeVerdict, 0 | 1 | 2> = {
  resumable: 0,
  not_resumable: 1,
  untestable: 2,
  not_applicable: 2,
};

/** A command line the probe cannot run (sysexits' EX_USAGE): never confused with a verdict. */
export const USAGE_ERROR = 64;

/** Forks the probe sees beyond the core's reasons: a real cursor answered 200 without its replay. */
export type ProbeForkReason = ForkReason | 'no_frame' | 'eof_without_frames' | 'wrong_first_frame';
/**
 * Why a resume was refused (`http_<status>`) or failed: no answer, not SSE, a stream past the reader's limits, a
 * redirect (never followed), a frame still arriving when the wait ended (a trickle).
 */
export type ResumeFailureReason =
  | `http_${number}`
  | 'no_response'
  | 'not_sse'
  | 'stream_error'
  | 'redirected'
  | 'slow_stream';

export interface ResumeAttempt {
  /** 1-based. */
  attempt: number;
  status: number | null;
  outcome: ResumeOutcome;
  reason?: ProbeForkReason | ResumeFailureReason;
  /** Id of the first frame after the cursor (null: the frame had no id; absent: no frame). */
  firstEventId?: string | null;
  /** True when the first frame carried the response the cursor preceded. */
  replayedResponse?: boolean;
  continuityVerified?: boolean;
  codec?: string;
  /** 409 answers retried: the server had not yet noticed the previous connection close. */
  conflictRetries: number;
  ms: number;
  detail: string;
}

export interface ResumeSummary {
  attempts: number;
  outcomes: Record<ResumeOutcome, number>;
  /** forked / attempts; null when no attempt was made. */
  forkedRatio: number | null;
  /** HTTP status → count ('none' when no response). */
  statusCodes: Record<string, number>;
  /** First event id → count ('(no id)' for an id-less frame, '(no frame)' when none came). */
  firstEventIds: Record<string, number>;
  details: ResumeAttempt[];
}

export interface ProbeReport {
  schema: 'forkwatch.probe/v1';
  target: string;
  startedAt: string;
  durationMs: number;
  verdict: ProbeVerdict;
  exitCode: 0 | 1 | 2;
  summary: string;
  protocol: { requested: string; negotiated: string | null; serverSupported?: string[] };
  session: { id: string | null };
  cursor: { real: string | null; expectedEventId: string | null; bogus: string | null };
  /** The request (POST response) stream's conditions. */
  conditions: Record<ConditionName, ConditionResult>;
  resumes: ResumeSummary;
  /** Per stream kind: the request stream's verdict, and everything about the standalone GET stream. */
  streams: { request: { verdict: ProbeVerdict }; standalone: StandaloneReport };
  steps: StepRecord[];
  notes: string[];
}

export function decideVerdict(conditions: Readonly<Record<string, ConditionResult>>): ProbeVerdict {
  const statuses = Object.values(conditions).map(c => c.status);
  if (statuses.every(s => s === 'not_applicable')) return 'not_applicable';
  if (statuses.includes('fail')) return 'not_resumable';
  // A condition that does not apply to this server (said why in its detail) neither passes nor blocks a pass.
  if (statuses.every(s => s === 'pass' || s === 'not_applicable')) return 'resumable';
  return 'untestable';
}

export function summarizeResumes(details: ResumeAttempt[]): ResumeSummary {
  const outcomes = Object.fromEntries(PROBE_RESUME_OUTCOMES.map(o => [o, 0])) as Record<ResumeOutcome, number>;
  const statusCodes: Record<string, number> = {};
  const firstEventIds: Record<string, number> = {};
  for (const d of details) {
    outcomes[d.outcome]++;
    const status = d.status === null ? 'none' : String(d.status);
    statusCodes[status] = (statusCodes[status] ?? 0) + 1;
    if (d.status !== null && d.status >= 200 && d.status < 300) {
      const key = d.firstEventId === undefined ? '(no frame)' : d.firstEventId === null ? '(no id)' : d.firstEventId;
      firstEventIds[key] = (firstEventIds[key] ?? 0) + 1;
    }
  }
  return {
    attempts: details.length,
    outcomes,
    forkedRatio: details.length === 0 ? null : outcomes.forked / details.length,
    statusCodes,
    firstEventIds,
    details,
  };
}

/**
 * The verdict over every stream kind: any failure fails; resumable only when each kind the server offers was
 * judged resumable (a stream the probe could not exercise is untestable, never a pass); not applicable when no
 * kind applies.
 */
export function combineVerdicts(verdicts: readonly ProbeVerdict[]): ProbeVerdict {
  if (verdicts.includes('not_resumable')) return 'not_resumable';
  if (verdicts.includes('untestable')) return 'untestable';
  if (verdicts.includes('resumable')) return 'resumable';
  return 'not_applicable';
}

export function allStandalone(
  status: ConditionStatus,
  detail: string,
): Record<StandaloneConditionName, ConditionResult> {
  return Object.fromEntries(STANDALONE_CONDITIONS.map(name => [name, { status, detail }])) as Record<
    StandaloneConditionName,
    ConditionResult
  >;
}

export function allConditions(status: ConditionStatus, detail: string): Record<ConditionName, ConditionResult> {
  return Object.fromEntries(CONDITIONS.map(name => [name, { status, detail }])) as Record<
    ConditionName,
    ConditionResult
  >;
}
