/** What `forkwatch probe` found: the conditions it checks, the overall verdict and its exit code. */
import { RESUME_OUTCOMES, type ForkReason, type ResumeOutcome } from '../../core/verdict';
import type { StepRecord } from './mcp-http';

export const CONDITIONS = ['event_ids', 'replay', 'bogus_cursor_refused', 'repeated_resumes'] as const;
export type ConditionName = (typeof CONDITIONS)[number];

export const CONDITION_TITLES: Record<ConditionName, string> = {
  event_ids: 'event ids on SSE streams',
  replay: 'resume replays from the cursor',
  bogus_cursor_refused: 'unknown cursor refused',
  repeated_resumes: 'repeated resumes',
};

/** `not_tested`: the probe could not decide (a step failed or a prerequisite was missing). */
export type ConditionStatus = 'pass' | 'fail' | 'not_tested' | 'not_applicable';

export interface ConditionResult {
  status: ConditionStatus;
  /** One line, for people. */
  detail: string;
  evidence?: Record<string, unknown>;
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
/** Why a resume was refused (`http_<status>`) or failed. */
export type ResumeFailureReason = `http_${number}` | 'no_response' | 'not_sse' | 'stream_error';

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
  conditions: Record<ConditionName, ConditionResult>;
  resumes: ResumeSummary;
  steps: StepRecord[];
  notes: string[];
}

export function decideVerdict(conditions: Record<ConditionName, ConditionResult>): ProbeVerdict {
  const statuses = CONDITIONS.map(name => conditions[name].status);
  if (statuses.every(s => s === 'not_applicable')) return 'not_applicable';
  if (statuses.includes('fail')) return 'not_resumable';
  if (statuses.every(s => s === 'pass')) return 'resumable';
  return 'untestable';
}

export function summarizeResumes(details: ResumeAttempt[]): ResumeSummary {
  const outcomes = Object.fromEntries(RESUME_OUTCOMES.map(o => [o, 0])) as Record<ResumeOutcome, number>;
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

export function allConditions(status: ConditionStatus, detail: string): Record<ConditionName, ConditionResult> {
  return Object.fromEntries(CONDITIONS.map(name => [name, { status, detail }])) as Record<
    ConditionName,
    ConditionResult
  >;
}
