/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The standalone GET stream: open it, get its cursor (standalone-cursor.ts), drop it, make the server send while it
 * is away, resume it over a new connection and check that the missed events come first and that the stream goes on
 * carrying new ones (standalone-replay.ts); then an unknown cursor of the same shape, and repeated resumes.
 * Whatever the probe could not make happen is `not_tested`, never a pass.
 */
import { detectCodec, safeDecode } from '../../core/codecs';
import { bogusCursor } from './bogus-cursor';
import { ConditionBook } from './condition-book';
import { unusableIds } from './conditions';
import { mixedResumes } from './diagnose';
import { failed, result } from './fixes';
import { type Exchange, type McpHttp, errorMessage, redirected, shownType } from './mcp-http';
import { type PipelineTask, runPipelined } from './pipeline';
import type { ProgressSink } from './progress';
import {
  type ConditionResult,
  type ResumeAttempt,
  type ResumeSummary,
  type StandaloneConditionName,
  type StandaloneReport,
  allStandalone,
  decideVerdict,
  summarizeResumes,
} from './report';
import { checkBogusCursor, resumeGet, resumeOnce, shownId } from './resume';
import { type Got, NOTIFY_TOOL_CALLS, getCursor } from './standalone-cursor';
import {
  type Diagnosis,
  type ReplayProof,
  ROUNDS,
  continues,
  exampleStoreGetStream,
  judgeReplay,
} from './standalone-replay';
import { openStandalone } from './standalone-stream';
import { type Trigger, type TriggerOptions, availableTriggers, enableLogging } from './triggers';

export interface StandaloneInput extends TriggerOptions {
  http: McpHttp;
  serverCapabilities: Record<string, unknown>;
  /** Repeated resumes, as for request streams. */
  resumes: number;
  /** How long to wait for each trigger's message (and for a priming event). */
  waitMs: number;
  progress: ProgressSink;
  /** What the request streams showed: resumes that went both ways point at another replica's log. */
  request: { resumes: ResumeSummary };
}

type Conditions = Record<StandaloneConditionName, ConditionResult>;
type Book = ConditionBook<StandaloneConditionName>;

/**
 * 409s on the one standalone stream are retried this long: behind a balancer that does not pass a client's close
 * on (HAProxy, measured), the server holds the probe's dropped connection until its next keep-alive write (the
 * SDK's default is every 15 s), and the SDK refuses a second connection to the stream meanwhile.
 */
const CONFLICT_WAIT_MS = 20_000;
/** A hold longer than this is reported: a real client reconnecting that soon is refused too. */
const NOTABLE_HOLD_MS = 1000;
/** Repeated resumes of the standalone stream (at most --resumes). */
const STANDALONE_RESUMES = 3;
/** Answers to the standalone GET that say "not now" or "not you" (credentials), not "this stream does not work". */
const NOT_NOW = new Set([401, 403, 408, 429, 503]);

export function standaloneReport(
  conditions: Conditions,
  extra: Partial<Omit<StandaloneReport, 'conditions' | 'verdict'>> = {},
): StandaloneReport {
  return {
    verdict: decideVerdict(conditions),
    conditions,
    cursor: extra.cursor ?? { real: null, source: null, bogus: null },
    trigger: extra.trigger ?? null,
    tried: extra.tried ?? [],
    resumes: extra.resumes ?? summarizeResumes([]),
    notes: extra.notes ?? [],
  };
}

export async function probeStandalone(input: StandaloneInput): Promise<StandaloneReport> {
  const { http, progress } = input;
  progress('standalone stream: opening');
  const { exchange, stream } = await openStandalone(http, 'standalone_open');
  if (stream === undefined) return standaloneReport(await refusedOpen(http, exchange));

  await enableLogging(http, input.serverCapabilities);
  const tried: string[] = [];
  const got = await getCursor(stream, availableTriggers(http, input), tried, input);
  const cursor = stream.lastId;
  const cursorReadAt = stream.lastIdReadAt;
  const consumed = new Set(stream.frames.flatMap(f => (f.id ? [f.id] : [])));
  await stream.close();

  if (got.streamError !== undefined)
    return standaloneReport(allStandalone('not_tested', `the standalone stream sent ${got.streamError}`), { tried });
  if (cursor === undefined) return reportWithoutCursor(stream.frames.length, got, tried, input.waitMs);
  const unusable = unusableIds([cursor], { cursor }, 'standalone.event_ids');
  if (unusable !== undefined) {
    const conditions = allStandalone('not_tested', 'no cursor to resume from (see event ids)');
    return standaloneReport({ ...conditions, event_ids: unusable }, { tried });
  }
  const source = got.priming ? 'priming' : 'event';
  const book: Book = new ConditionBook(allStandalone('not_tested', 'not reached'), () => http.stopped);
  const sentAfter = got.trigger ? `, sent after ${got.trigger.describe}` : '';
  const what = source === 'priming' ? 'priming event' : 'events';
  book.set('event_ids', result('pass', `${what} with ids (cursor ${shownId(cursor)}${sentAfter})`));
  const diagnosis: Diagnosis = {
    cursor,
    replicas: mixedResumes(input.request.resumes) !== undefined || got.missedCalls > 0,
  };
  const notes: string[] = [];
  const { firstId, holdMs, awayFired } = await awayAndBack(input, got, tried, book, diagnosis, {
    cursor,
    consumed,
    markers: got.markers,
    cursorReadAt,
    hasMessages: stream.frames.some(f => f.data.trim() !== ''),
    held: ms => notes.push(heldNote(ms)),
  });
  const bogus = bogusCursor(cursor, consumed);
  progress('standalone stream: unknown cursor');
  const bogusCheck = { stream: 'standalone' as const, realCursor: cursor, step: 'standalone_bogus_cursor' };
  book.set('bogus_cursor_refused', await checkBogusCursor(http, bogus, bogusCheck));

  const attempts = await repeatIfUseful(input, { cursor, consumed, firstId, holdMs }, awayFired, book, diagnosis);
  return standaloneReport(book.final(), {
    cursor: { real: cursor, source, bogus },
    trigger: got.trigger?.name ?? (got.unprompted ? 'unprompted' : got.priming ? 'priming' : null),
    tried,
    resumes: summarizeResumes(attempts),
    notes,
  });
}

function heldNote(ms: number): string {
  return `the server held the probe's dropped standalone connection for ${(ms / 1000).toFixed(1)} s before it accepted a resume (409 meanwhile): a balancer that does not pass a client's close on, and a server that notices at its next keep-alive; a client that reconnects sooner is refused, and the SDK client gives up after 2 retries`;
}

/**
 * The standalone GET not answered with a stream. 405 says the server offers none; no answer, a redirect, a non-SSE
 * 2xx and the answers that mean "not now" or "not you" prove nothing; any other error is a failure: the spec allows
 * an SSE stream or 405 only, and a client refused otherwise (the SDK's reports the error and never retries) has no
 * stream for anything the server sends on its own, nor anything to resume.
 */
async function refusedOpen(http: McpHttp, exchange: Exchange): Promise<Conditions> {
  const { status } = exchange;
  if (status === 405) {
    await exchange.close();
    return allStandalone('not_applicable', 'GET answered 405: the server offers no standalone stream');
  }
  const untested = (detail: string) => allStandalone('not_tested', `the standalone GET ${detail}`);
  if (status === 0) return untested(`got no answer: ${exchange.error}`);
  if (status >= 200 && status < 400) {
    await exchange.close();
    return untested(
      status >= 300 ? redirected(exchange) : `was answered ${status} ${shownType(exchange)}, not an SSE stream`,
    );
  }
  const message = await errorMessage(http, exchange);
  if (NOT_NOW.has(status)) return untested(`was answered ${status}${message}`);
  const conditions = allStandalone('not_tested', 'no standalone stream to resume (see event ids)');
  const detail = `the standalone GET was answered ${status}${message}: a client has no stream for the server's own messages, and nothing on it can be resumed`;
  return { ...conditions, event_ids: failed('standalone.event_ids', 'standalone_get_refused', detail, { status }) };
}

/** No cursor came: the report says why (ids missing, or nothing could be made to arrive on the stream). */
function reportWithoutCursor(frames: number, got: Got, tried: string[], waitMs: number): StandaloneReport {
  if (got.silentTool !== undefined && frames === 0) {
    // The operator said this tool notifies: every call answered, and nothing reached the session's stream.
    const conditions = allStandalone('not_tested', 'no cursor to resume from');
    const detail = `${got.silentTool} answered ${NOTIFY_TOOL_CALLS} times (new connections) and nothing it sent arrived on the standalone stream within ${waitMs} ms each: its notifications go to a process that does not hold the stream (no affinity?), or on its request stream`;
    conditions.event_ids = failed('standalone.event_ids', 'notify_tool_silent', detail, {
      calls: NOTIFY_TOOL_CALLS,
      waitMs,
    });
    return standaloneReport(conditions, { tried });
  }
  if (frames > 0) {
    const conditions = allStandalone('not_tested', 'no cursor to resume from');
    const detail = 'the stream carried events without ids: a lost GET stream cannot be resumed';
    conditions.event_ids = failed('standalone.event_ids', 'standalone_ids_missing', detail, { frames });
    return standaloneReport(conditions, { tried });
  }
  const detail = `the probe could not make the server send on the standalone GET stream (tried: ${tried.join('; ')}); pass --notify-tool NAME for a tool that sends notifications`;
  return standaloneReport(allStandalone('not_tested', detail), { tried });
}

interface Away {
  cursor: string;
  consumed: ReadonlySet<string>;
  markers: ReadonlySet<string> | undefined;
  cursorReadAt: number | undefined;
  /** The stream carried messages before the cursor (live traffic, maybe). */
  hasMessages: boolean;
  held(ms: number): void;
}

/** Away (events sent meanwhile), then the first resume: `cursor_accepted`, `replay` and `continues` into `book`. */
async function awayAndBack(
  input: StandaloneInput,
  got: Got,
  tried: string[],
  book: Book,
  diagnosis: Diagnosis,
  away: Away,
): Promise<{ firstId?: string; holdMs: number; awayFired: boolean }> {
  const { http, progress } = input;
  const awayFired = await sendWhileAway(got, tried, progress);
  const pause =
    awayFired && got.markers?.size === 0 && away.hasMessages ? awayPause(got, away.cursor, input.waitMs) : 0;
  if (pause > 0) {
    // No markers: a replay is proved by the ids alone, and ids that carry no dense sequence (time stamps) prove it
    // only for events stored well before the resume (storedWhileAway).
    progress('standalone stream: away while what was sent is stored');
    await http.budget.sleep(pause);
  }
  progress('standalone stream: resuming');
  let holdMs = 0;
  const proof = {
    cursor: away.cursor,
    consumed: away.consumed,
    markers: away.markers,
    cursorReadAt: away.cursorReadAt,
  };
  const firstId = await resumeStandalone(http, proof, awayFired, got.trigger, book, diagnosis, ms => {
    holdMs = ms;
    away.held(ms);
  });
  return { ...(firstId !== undefined ? { firstId } : {}), holdMs, awayFired };
}

/** An operator's notify tool stores events of its own while away: a short pause dates them before the resume. */
const NOTIFY_TOOL_PAUSE_MS = 500;

/**
 * How long to stay away when the probe has no markers (its trigger's content changes per call, or a second call
 * reached another replica). Ids with a dense sequence prove a replay as they are: none. Otherwise the replay is
 * dated by the ids' time stamps, which prove an event stored while away only when it was stored more than the
 * cursor's read latency before the resume: the operator's notify tool stored its own events meanwhile, and half a
 * second dates them; any other trigger may have caused nothing (a live tick taken for its event), so the probe
 * stays away a whole wait for live traffic to be stored.
 */
function awayPause(got: Got, cursor: string, waitMs: number): number {
  const codec = detectCodec(cursor);
  const decoded = codec ? safeDecode(codec, cursor) : undefined;
  if (decoded?.sequence !== undefined && decoded.dense === true && decoded.learned !== true) return 0;
  return got.trigger?.name === 'notify_tool' ? Math.min(NOTIFY_TOOL_PAUSE_MS, waitMs) : waitMs;
}

/**
 * Away: events the server sends now must come back first on the resume. Each round is a new connection, so behind
 * a balancer without affinity they reach different replicas. True when at least one was sent.
 */
async function sendWhileAway(got: Got, tried: string[], progress: (text: string) => void): Promise<boolean> {
  if (got.trigger === undefined) return false;
  progress('standalone stream: sending while away');
  let fired = false;
  for (let round = 1; round <= ROUNDS; round++) {
    const why = await got.trigger.fire();
    if (why === undefined) fired = true;
    else tried.push(`${got.trigger.describe} while away: ${why}`);
  }
  return fired;
}

/** The first resume: accepted, replays what was sent while away, and keeps carrying what is sent next. */
async function resumeStandalone(
  http: McpHttp,
  proof: Omit<ReplayProof, 'resumeSentAt'>,
  awayFired: boolean,
  trigger: Trigger | undefined,
  book: Book,
  diagnosis: Diagnosis,
  held: (ms: number) => void,
): Promise<string | undefined> {
  // Taken before the first try: a resume sent later, after 409s, only makes the time-stamp proof stricter.
  const resumeSentAt = Date.now();
  const got = await resumeGet(http, 'standalone_resume', proof.cursor, undefined, CONFLICT_WAIT_MS);
  const { exchange, conflicts, conflictMs } = got;
  if (conflictMs > NOTABLE_HOLD_MS) held(conflictMs);
  const { stream } = await openStandalone(http, 'standalone_resume', exchange);
  if (stream === undefined) {
    acceptedOrNot(book, diagnosis, exchange, conflicts, await errorMessage(http, exchange));
    await exchange.close();
    return undefined;
  }
  book.set(
    'cursor_accepted',
    result('pass', `answered ${exchange.status} (SSE)`, { status: exchange.status, conflictRetries: conflicts }),
  );
  let firstId: string | undefined;
  let unreadable = false;
  try {
    if (!awayFired) {
      book.set('replay', result('not_tested', 'no event was known to be sent while the stream was away'));
    } else {
      const read = await stream.nextMessage(http.frameDeadline());
      const replay = await judgeReplay(read, { ...proof, resumeSentAt }, stream, http, diagnosis);
      book.set('replay', replay);
      if (read.kind === 'frame' && replay.status === 'pass') firstId = read.frame.id;
      unreadable =
        (read.kind === 'timeout' && read.midFrame === true) || (read.kind === 'error' && read.oversized === true);
      await stream.drain(http.deadline());
    }
    if (trigger === undefined) {
      book.set('continues', result('not_tested', 'the probe cannot make the server send on the stream'));
    } else if (unreadable) {
      // A stream too slow or too large to read shows nothing the probe could judge after it either.
      book.set('continues', result('not_tested', 'the resumed stream could not be read (see replay)'));
    } else {
      const replayed = book.get('replay').status === 'pass';
      book.set('continues', await continues(http, stream, trigger, { ...diagnosis, replayed }));
    }
  } finally {
    await stream.close();
  }
  return firstId;
}

/** The resume answered without a stream: refused (a failure), or nothing proven (no answer, a redirect, not SSE). */
function acceptedOrNot(book: Book, diagnosis: Diagnosis, exchange: Exchange, conflicts: number, message: string): void {
  const { status } = exchange;
  const evidence = { status: status === 0 ? null : status, conflictRetries: conflicts };
  if (status === 0 || (status >= 200 && status < 400)) {
    const answer =
      status === 0
        ? `no answer (${exchange.error})`
        : status >= 300
          ? redirected(exchange)
          : `${status} ${shownType(exchange)}, not an SSE stream`;
    book.set('cursor_accepted', result('not_tested', `the server's own cursor was answered ${answer}`, evidence));
    return;
  }
  const cause = diagnosis.replicas ? 'other_replica_refuses' : 'cursor_refused';
  const detail = `the server's own cursor was answered ${status}${message}`;
  book.set('cursor_accepted', failed('standalone.cursor_accepted', cause, detail, evidence));
  book.set('replay', failed('standalone.replay', cause, 'refused: what was sent while away is lost', evidence));
}

/**
 * The repeated resumes, when they can show something the first resume did not: it must have been accepted and have
 * replayed. A first resume that lost the events already proves the stream not resumable, and more resumes of the
 * one stream (one after another: a server takes one connection per stream) would each wait out the same silence;
 * the request streams' resumes, over a ping each, test the spread over replicas.
 */
async function repeatIfUseful(
  input: StandaloneInput,
  resume: { cursor: string; consumed: Set<string>; firstId: string | undefined; holdMs: number },
  awayFired: boolean,
  book: Book,
  diagnosis: Diagnosis,
): Promise<ResumeAttempt[]> {
  const why = !awayFired
    ? 'no event was known to be sent while the stream was away, so a resume has nothing to replay'
    : book.get('cursor_accepted').status !== 'pass'
      ? "the server's own cursor was not accepted"
      : book.get('replay').status === 'fail'
        ? 'not repeated: the first resume already lost what was sent while away (see replay)'
        : undefined;
  const replayed = book.get('replay').status === 'pass';
  if (why === undefined) return repeatResumes(input, resume, book, { ...diagnosis, replayed });
  book.set('repeated_resumes', result('not_tested', why));
  return [];
}

/** Resumes of the same cursor, one after another over new connections: each must replay the same log. */
async function repeatResumes(
  input: StandaloneInput,
  resume: { cursor: string; consumed: Set<string>; firstId: string | undefined; holdMs: number },
  book: Book,
  diagnosis: Diagnosis,
): Promise<ResumeAttempt[]> {
  const target = {
    cursor: resume.cursor,
    consumedUpToCursor: resume.consumed,
    expected: 'the first event sent while the stream was away',
    conflictWaitMs: CONFLICT_WAIT_MS,
    ...(resume.firstId !== undefined ? { standaloneFirstId: resume.firstId } : {}),
  };
  if (resume.holdMs > NOTABLE_HOLD_MS) {
    // A 409 comes from the process that holds the stream (the SDK's check is in-process): every resume reached
    // that process. Repeated resumes would test it again, each after waiting out another hold.
    const detail = `not repeated: the ${(resume.holdMs / 1000).toFixed(1)} s hold (409 from the process holding the stream) shows resumes of this stream reach that process; request streams were resumed over new connections`;
    book.set('repeated_resumes', result('not_applicable', detail));
    return [];
  }
  const count = Math.min(input.resumes, STANDALONE_RESUMES);
  const tasks: PipelineTask<ResumeAttempt>[] = [];
  for (let k = 1; k <= count; k++)
    tasks.push(turn => resumeOnce(input.http, `standalone_resume_repeat_${k}`, k, target, turn));
  const attempts = await runPipelined(tasks, done => input.progress(`standalone stream: resumes ${done}/${count}`));
  book.set('repeated_resumes', repeated(attempts, diagnosis));
  return attempts;
}

function repeated(attempts: ResumeAttempt[], diagnosis: Diagnosis): ConditionResult {
  const summary = summarizeResumes(attempts);
  const { resumed, forked, rejected } = summary.outcomes;
  const detail = `${resumed}/${attempts.length} replayed the missed events, ${forked} forked, ${rejected} refused`;
  const evidence = { outcomes: summary.outcomes, statusCodes: summary.statusCodes };
  if (resumed === attempts.length) return result('pass', detail, evidence);
  if (forked === 0 && rejected === 0) return result('not_tested', detail, evidence);
  const replicas = resumed > 0 || diagnosis.replicas;
  const cause =
    forked > 0
      ? exampleStoreGetStream(diagnosis)
        ? 'example_store_get_stream'
        : replicas
          ? 'other_replica'
          : 'replay_missing'
      : replicas
        ? 'other_replica_refuses'
        : 'cursor_refused';
  return failed('standalone.repeated_resumes', cause, detail, evidence);
}
