/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The standalone GET stream: open it, get its cursor (a priming event, or the id of an event the probe made the
 * server send), drop it, make the server send while it is away, resume it over a new connection and check that
 * the missed events come first and that the stream goes on carrying new ones; then an unknown cursor of the same
 * shape, and repeated resumes. Whatever the probe could not make happen is `not_tested`, never a pass.
 */
import { detectCodec, safeDecode } from '../../core/codecs';
import { isFiniteNumber } from '../../core/numbers';
import { decideFirstFrame } from '../../core/verdict';
import { displayEventId } from '../../core/event-id';
import { bogusCursor } from './bogus-cursor';
import { markerOf, reproducibleMarkers } from './markers';
import type { McpHttp } from './mcp-http';
import type { SseFrame } from './sse-reader';
import { type PipelineTask, runPipelined } from './pipeline';
import {
  type ConditionResult,
  type ResumeAttempt,
  type StandaloneConditionName,
  type StandaloneReport,
  allStandalone,
  decideVerdict,
  summarizeResumes,
} from './report';
import { checkBogusCursor, resumeGet, resumeOnce } from './resume';
import type { ProgressSink } from './progress';
import { type StandaloneStream, openStandalone } from './standalone-stream';
import { type Trigger, type TriggerOptions, availableTriggers, enableLogging } from './triggers';

export interface StandaloneInput extends TriggerOptions {
  http: McpHttp;
  serverCapabilities: Record<string, unknown>;
  /** Repeated resumes, as for request streams. */
  resumes: number;
  /** How long to wait for each trigger's message (and for a priming event). */
  waitMs: number;
  progress: ProgressSink;
}

type Conditions = Record<StandaloneConditionName, ConditionResult>;

const PRIMING_WAIT_MS = 250;
/**
 * 409s on the one standalone stream are retried this long: behind a balancer that does not pass a client's close
 * on (HAProxy, measured), the server holds the probe's dropped connection until its next keep-alive write (the
 * SDK's default is every 15 s), and the SDK refuses a second connection to the stream meanwhile.
 */
const CONFLICT_WAIT_MS = 20_000;
/** A hold longer than this is reported: a real client reconnecting that soon is refused too. */
const NOTABLE_HOLD_MS = 1000;
/** Events made while away and after the resume, each over a new connection. */
const ROUNDS = 2;
/** Repeated resumes of the standalone stream (at most --resumes). */
const STANDALONE_RESUMES = 3;

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
  if (stream === undefined) {
    await exchange.close();
    if (exchange.status === 405)
      return standaloneReport(
        allStandalone('not_applicable', 'GET answered 405: the server offers no standalone stream'),
      );
    const answer = exchange.status === 0 ? exchange.error : `${exchange.status} ${exchange.mediaType || ''}`.trim();
    return standaloneReport(allStandalone('not_tested', `the standalone GET was answered ${answer}`));
  }

  await enableLogging(http, input.serverCapabilities);
  const triggers = availableTriggers(http, input);
  const tried: string[] = [];
  const notes: string[] = [];
  const got = await getCursor(stream, triggers, tried, input);
  const cursor = stream.lastId;
  const cursorReadAt = stream.lastIdReadAt;
  const consumed = new Set(stream.frames.flatMap(f => (f.id ? [f.id] : [])));
  await stream.close();

  if (cursor === undefined) return reportWithoutCursor(stream.frames.length, got, tried, input.waitMs);
  const source = got.priming ? 'priming' : 'event';
  const conditions = allStandalone('not_tested', 'not reached');
  conditions.event_ids = {
    status: 'pass',
    detail: `${source === 'priming' ? 'priming event' : 'events'} with ids (cursor ${displayEventId(cursor)}${got.trigger ? `, sent after ${got.trigger.describe}` : ''})`,
  };

  const awayFired = await sendWhileAway(got, tried, progress);
  if (awayFired && got.markers?.size === 0 && stream.frames.some(f => f.data.trim() !== '')) {
    // Its own events cannot be told from live ones: stay away long enough for live traffic to be stored meanwhile,
    // so that a replay has events the ids can date (storedWhileAway).
    progress('standalone stream: away while live traffic is stored');
    await new Promise(resolve => setTimeout(resolve, input.waitMs));
  }

  progress('standalone stream: resuming');
  let holdMs = 0;
  const resumed = await resumeStandalone(
    http,
    { cursor, consumed, markers: got.markers, cursorReadAt },
    awayFired,
    got.trigger,
    conditions,
    ms => {
      holdMs = ms;
      notes.push(
        `the server held the probe's dropped standalone connection for ${(ms / 1000).toFixed(1)} s before it accepted a resume (409 meanwhile): a balancer that does not pass a client's close on, and a server that notices at its next keep-alive; a client that reconnects sooner is refused, and the SDK client gives up after 2 retries`,
      );
    },
  );
  const bogus = bogusCursor(cursor, consumed);
  progress('standalone stream: unknown cursor');
  conditions.bogus_cursor_refused = await checkBogusCursor(http, bogus, undefined, 'standalone_bogus_cursor');

  const canRepeat = awayFired && conditions.cursor_accepted.status === 'pass';
  const attempts = canRepeat
    ? await repeatResumes(input, { cursor, consumed, firstId: resumed.firstId, holdMs }, conditions)
    : [];
  if (!canRepeat) {
    conditions.repeated_resumes = {
      status: 'not_tested',
      detail: awayFired
        ? "the server's own cursor was not accepted"
        : 'no event was known to be sent while the stream was away, so a resume has nothing to replay',
    };
  }
  return standaloneReport(conditions, {
    cursor: { real: cursor, source, bogus },
    trigger: got.trigger?.name ?? (got.unprompted ? 'unprompted' : got.priming ? 'priming' : null),
    tried,
    resumes: summarizeResumes(attempts),
    notes,
  });
}

/** No cursor came: the report says why (ids missing, or nothing could be made to arrive on the stream). */
function reportWithoutCursor(frames: number, got: Got, tried: string[], waitMs: number): StandaloneReport {
  if (got.silentTool !== undefined && frames === 0) {
    // The operator said this tool notifies: every call answered, and nothing reached the session's stream.
    const conditions = allStandalone('not_tested', 'no cursor to resume from');
    conditions.event_ids = {
      status: 'fail',
      detail: `${got.silentTool} answered ${NOTIFY_TOOL_CALLS} times (new connections) and nothing it sent arrived on the standalone stream within ${waitMs} ms each: its notifications go to a process that does not hold the stream (no affinity?), or on its request stream`,
    };
    return standaloneReport(conditions, { tried });
  }
  const noCursor =
    frames > 0
      ? 'the stream carried events without ids: a lost GET stream cannot be resumed'
      : `the probe could not make the server send on the standalone GET stream (tried: ${tried.join('; ')}); pass --notify-tool NAME for a tool that sends notifications`;
  const conditions = allStandalone('not_tested', frames > 0 ? 'no cursor to resume from' : noCursor);
  if (frames > 0) conditions.event_ids = { status: 'fail', detail: noCursor };
  return standaloneReport(conditions, { tried });
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

/** Resumes of the same cursor, one after another over new connections: each must replay the same log. */
async function repeatResumes(
  input: StandaloneInput,
  resume: { cursor: string; consumed: Set<string>; firstId: string | undefined; holdMs: number },
  conditions: Conditions,
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
    conditions.repeated_resumes = {
      status: 'not_applicable',
      detail: `not repeated: the ${(resume.holdMs / 1000).toFixed(1)} s hold (409 from the process holding the stream) shows resumes of this stream reach that process; request streams were resumed over new connections`,
    };
    return [];
  }
  const count = Math.min(input.resumes, STANDALONE_RESUMES);
  const tasks: PipelineTask<ResumeAttempt>[] = [];
  for (let k = 1; k <= count; k++)
    tasks.push(turn => resumeOnce(input.http, `standalone_resume_repeat_${k}`, k, target, turn));
  const attempts = await runPipelined(tasks, done => input.progress(`standalone stream: resumes ${done}/${count}`));
  conditions.repeated_resumes = repeated(attempts);
  return attempts;
}

interface Got {
  priming: boolean;
  unprompted: boolean;
  trigger?: Trigger;
  /** What the trigger made the server send, by content (markers.ts): the proof of a replay when ids prove nothing. */
  markers?: ReadonlySet<string>;
  /** The operator's notify tool answered every call and nothing it sent reached the stream. */
  silentTool?: string;
}

/** Calls of the operator's notify tool before concluding that what it sends never reaches this stream. */
const NOTIFY_TOOL_CALLS = 3;

/** Reads the stream until it has a cursor: a priming event, or a message made by the first trigger that works. */
async function getCursor(
  stream: StandaloneStream,
  triggers: Trigger[],
  tried: string[],
  input: StandaloneInput,
): Promise<Got> {
  const first = await stream.next(Date.now() + PRIMING_WAIT_MS);
  const priming = first.kind === 'frame' && first.frame.data.trim() === '' && !!first.frame.id;
  const unpromptedMessage = first.kind === 'frame' && !priming;
  // What arrives before the probe made the server send anything is live traffic: no marker of the probe's.
  const unprompted = [...stream.frames];
  let silentTool: string | undefined;
  for (const trigger of triggers) {
    // Each call is a new connection: behind a balancer without affinity, one may reach the stream's process.
    const calls = trigger.name === 'notify_tool' ? NOTIFY_TOOL_CALLS : 1;
    let answered = 0;
    for (let call = 1; call <= calls; call++) {
      input.progress(`standalone stream: ${trigger.describe}`);
      const why = await trigger.fire();
      if (why !== undefined) {
        tried.push(`${trigger.describe}: ${why}`);
        break;
      }
      answered++;
      const caused = stream.frames.length;
      const read = await stream.nextMessage(Date.now() + input.waitMs);
      if (read.kind === 'frame') {
        // The rest of the burst (a tool's second notification) belongs before the cursor too.
        await stream.drain(Date.now() + input.waitMs);
        if (call > 1) tried.push(`${trigger.describe}: ${call - 1} of ${call} calls sent nothing to this stream`);
        const first = stream.frames.slice(caused);
        const again = await callAgain(trigger, stream, input.waitMs);
        const markers = reproducibleMarkers([first, again], unprompted);
        if (markers.size === 0)
          tried.push(
            `${trigger.describe}: what arrived after one call did not arrive again after the next (live traffic, or content that changes per call): the replay is judged on the ids`,
          );
        return { priming, unprompted: false, trigger, markers };
      }
    }
    if (answered > 0) tried.push(`${trigger.describe}: nothing arrived within ${input.waitMs} ms (${answered}×)`);
    if (trigger.name === 'notify_tool' && answered === calls) silentTool = trigger.describe;
  }
  return { priming, unprompted: unpromptedMessage, ...(silentTool ? { silentTool } : {}) };
}

/**
 * One more call of the trigger that worked, before the cursor is taken: its events are the probe's own only if they
 * come again (markers.ts). The frames it brought, none when it could not be called or nothing came.
 */
async function callAgain(trigger: Trigger, stream: StandaloneStream, waitMs: number): Promise<SseFrame[]> {
  const before = stream.frames.length;
  if ((await trigger.fire()) !== undefined) return [];
  const read = await stream.nextMessage(Date.now() + waitMs);
  if (read.kind === 'frame') await stream.drain(Date.now() + waitMs);
  return stream.frames.slice(before);
}

/** The first resume: accepted, replays what was sent while away, and keeps carrying what is sent next. */
async function resumeStandalone(
  http: McpHttp,
  proof: Omit<ReplayProof, 'resumeSentAt'>,
  awayFired: boolean,
  trigger: Trigger | undefined,
  conditions: Conditions,
  held: (ms: number) => void,
): Promise<{ firstId?: string }> {
  // Taken before the first try: a resume sent later, after 409s, only makes the time-stamp proof stricter.
  const resumeSentAt = Date.now();
  const { exchange, conflicts, conflictMs } = await resumeGet(
    http,
    'standalone_resume',
    proof.cursor,
    undefined,
    CONFLICT_WAIT_MS,
  );
  if (conflictMs > NOTABLE_HOLD_MS) held(conflictMs);
  const { stream } = await openStandalone(http, 'standalone_resume', exchange);
  const evidence = { status: exchange.status === 0 ? null : exchange.status, conflictRetries: conflicts };
  if (stream === undefined) {
    await exchange.close();
    const answer = exchange.status === 0 ? `no answer (${exchange.error})` : `${exchange.status}`;
    const status = exchange.status === 0 ? 'not_tested' : 'fail';
    conditions.cursor_accepted = { status, detail: `the server's own cursor was answered ${answer}`, evidence };
    if (status === 'fail') conditions.replay = { status, detail: 'refused: what was sent while away is lost' };
    return {};
  }
  conditions.cursor_accepted = { status: 'pass', detail: `answered ${exchange.status} (SSE)`, evidence };
  let firstId: string | undefined;
  try {
    if (!awayFired) {
      conditions.replay = { status: 'not_tested', detail: 'no event was known to be sent while the stream was away' };
    } else {
      const read = await stream.nextMessage(http.deadline());
      conditions.replay = await judgeReplay(read, { ...proof, resumeSentAt }, stream, http);
      if (read.kind === 'frame' && conditions.replay.status === 'pass') firstId = read.frame.id;
      await stream.drain(http.deadline());
    }
    if (trigger === undefined) {
      conditions.continues = { status: 'not_tested', detail: 'the probe cannot make the server send on the stream' };
      return firstId !== undefined ? { firstId } : {};
    }
    conditions.continues = await continues(http, stream, trigger);
  } finally {
    await stream.close();
  }
  return firstId !== undefined ? { firstId } : {};
}

/**
 * Events sent after the resume must arrive on the resumed stream: ROUNDS of them, each made over a new connection
 * (behind a balancer without affinity, the replica that makes one may not be the one holding the stream).
 */
async function continues(http: McpHttp, stream: StandaloneStream, trigger: Trigger): Promise<ConditionResult> {
  const arrived: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const why = await trigger.fire();
    if (why !== undefined) return { status: 'not_tested', detail: `${trigger.describe} after the resume: ${why}` };
    const next = await stream.nextMessage(http.deadline());
    if (next.kind !== 'frame') {
      return {
        status: 'fail',
        detail: `event ${round} of ${ROUNDS} sent after the resume (${trigger.describe}) never arrived on the resumed stream within ${http.timeoutMs} ms: the server (or the replica that sent it) does not write to this stream, so notifications are lost until the client reconnects`,
        evidence: { arrived },
      };
    }
    arrived.push(shownId(next.frame.id));
    // The rest of the burst, so that the next round waits for its own event.
    await stream.drain(http.deadline());
  }
  return { status: 'pass', detail: `${ROUNDS} events sent after the resume arrived on it (${arrived.join(', ')})` };
}

/**
 * What can prove a replay: the cursor and ids consumed before it (a codec's reading), the probe's markers, and when
 * the cursor was read and the resume sent (for ids that carry the time they were stored).
 */
interface ReplayProof {
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

/**
 * A replay passes only on proof: the first id continues the cursor by the codec's reading, or the events the probe
 * made while away arrive on the resumed stream. Events that merely arrive prove nothing: a server with live
 * traffic puts them on a fresh stream too.
 */
async function judgeReplay(
  read: Awaited<ReturnType<StandaloneStream['nextMessage']>>,
  proof: ReplayProof,
  stream: StandaloneStream,
  http: McpHttp,
): Promise<ConditionResult> {
  const { cursor, consumed, markers } = proof;
  if (read.kind === 'timeout')
    return {
      status: 'fail',
      detail: `answered 200 but replayed nothing within ${http.timeoutMs} ms (${stream.comments} keep-alive comments): the events sent while away are lost`,
    };
  if (read.kind !== 'frame')
    return { status: 'fail', detail: `the stream ${read.kind === 'eof' ? 'ended' : 'broke'} before any replay` };
  const verdict = decideFirstFrame({ cursor, firstId: read.frame.id, wasConsumed: id => consumed.has(id) });
  if (verdict.verdict === 'forked')
    return {
      status: 'fail',
      detail: `first frame (${shownId(read.frame.id)}) does not continue the cursor's log: ${verdict.reason}`,
    };
  if (verdict.verdict === 'resumed' && verdict.continuityVerified)
    return {
      status: 'pass',
      detail: `replayed an event sent while away first (${shownId(read.frame.id)}; its id continues the cursor)`,
    };
  const stamped = storedWhileAway(read.frame.id, proof);
  if (stamped !== undefined)
    return {
      status: 'pass',
      detail: `replayed an event stored while away first (${shownId(read.frame.id)}: stamped ${stamped.afterCursorMs} ms after the cursor, ${stamped.beforeResumeMs} ms or more before the resume was sent)`,
      evidence: { proof: 'time', ...stamped },
    };
  if (markers === undefined || markers.size === 0)
    return {
      status: 'not_tested',
      detail: `events arrived (first ${shownId(read.frame.id)}), but their ids do not show that they continue the cursor or were stored while away, and the probe cannot tell the events it made while away from live ones`,
    };
  // Replayed events may begin with live ones the server sent while away too: read on to the first marker.
  const seen: string[] = [];
  // One deadline for the whole replay: live events keep coming, each would restart a per-read one.
  const deadline = http.deadline();
  for (let frame = read.frame; ; ) {
    const marker = markerOf(frame);
    if (marker !== undefined && markers.has(marker))
      return {
        status: 'pass',
        detail: `the events the probe made while away were replayed (${shownId(frame.id)}, after ${seen.length} other event(s)); the ids (${shownId(read.frame.id)} first) prove no order`,
      };
    seen.push(shownId(frame.id));
    const next = await stream.nextMessage(deadline);
    if (next.kind !== 'frame')
      return {
        status: 'fail',
        detail: `${seen.length} event(s) arrived on the resumed stream within ${http.timeoutMs} ms, none of the events the probe made while away, and their ids prove no continuation of the cursor: live events on a stream that lost what was sent while away`,
        evidence: { arrived: seen.slice(0, 20) },
      };
    frame = next.frame;
  }
}

function repeated(attempts: ResumeAttempt[]): ConditionResult {
  const summary = summarizeResumes(attempts);
  const { resumed, forked, rejected } = summary.outcomes;
  const detail = `${resumed}/${attempts.length} replayed the missed events, ${forked} forked, ${rejected} refused`;
  const evidence = { outcomes: summary.outcomes, statusCodes: summary.statusCodes };
  if (resumed === attempts.length) return { status: 'pass', detail, evidence };
  if (forked > 0 || rejected > 0) return { status: 'fail', detail, evidence };
  return { status: 'not_tested', detail, evidence };
}

function shownId(id: string | undefined): string {
  return id ? `id ${displayEventId(id)}` : 'no id';
}
