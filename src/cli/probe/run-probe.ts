/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe itself: opens a session like a client would; on the request stream, obtains a real cursor (the
 * priming id of a `ping` stream, followed on that stream by the ping's response) and checks the four conditions;
 * then probes the standalone GET stream (standalone.ts); and ends the session.
 */
import { isOversizedKey } from '../../core/event-id';
import { bogusCursor } from './bogus-cursor';
import { ConditionBook } from './condition-book';
import { inspectPingStream, repeatedCondition, replayCondition, summarize, withoutPostStreams } from './conditions';
import { FINAL_STEP_MS, McpHttp, shownType } from './mcp-http';
import type { ProgressSink } from './progress';
import { type ProbeOptions, displayTarget } from './options';
import {
  type ConditionName,
  type ConditionResult,
  type ProbeReport,
  type ResumeAttempt,
  EXIT_CODES,
  type StandaloneReport,
  allConditions,
  allStandalone,
  combineVerdicts,
  decideVerdict,
  summarizeResumes,
} from './report';
import { probeStandalone, standaloneReport } from './standalone';
import { type PipelineTask, runPipelined } from './pipeline';
import { type ResumeTarget, checkBogusCursor, resumeOnce } from './resume';
import { isSendableId, safeReport } from './server-text';
import { type SessionOutcome, openSession } from './session';

const PING_ID = 'forkwatch-probe-ping';

interface Findings {
  conditions: Record<ConditionName, ConditionResult>;
  negotiated?: string;
  serverSupported?: string[];
  cursor?: string;
  expectedEventId?: string;
  bogus?: string;
  resumes?: ResumeAttempt[];
  notes?: string[];
  /** The server's capabilities, once a session is open. */
  serverCapabilities?: Record<string, unknown>;
}

/** Standalone streams are waited on for at most this long per trigger (bounded by --timeout too). */
const STANDALONE_WAIT_MS = 2000;

/** The run's time and the session's DELETE after it, both within `deadlineMs` (none: no bound but --timeout's). */
export function timeLimits(deadlineMs: number | undefined): { runMs: number; finalMs?: number } {
  if (deadlineMs === undefined) return { runMs: Number.POSITIVE_INFINITY };
  const finalMs = Math.min(FINAL_STEP_MS, deadlineMs / 2);
  return { runMs: deadlineMs - finalMs, finalMs };
}

/**
 * `stop` ends the probe early from outside (the exporter's abandoned scrape), as the deadline (`deadlineMs`) does:
 * exchanges in flight are cut, the session is still ended, and nothing decided after the cut counts as a pass or a
 * failure (condition-book.ts). Every string the server chose is escaped and clipped in the report (server-text.ts).
 */
export async function runProbe(
  options: ProbeOptions,
  progress: ProgressSink = () => undefined,
  stop?: AbortSignal,
): Promise<ProbeReport> {
  const startedAt = new Date();
  const http = new McpHttp(options.url, options.headers, options.timeoutMs, {
    ...(stop !== undefined ? { stop } : {}),
    ...timeLimits(options.deadlineMs),
  });
  let findings: Findings;
  let standalone: StandaloneReport;
  try {
    findings = await probe(http, options, progress);
    standalone = await standaloneOf(http, options, findings, progress);
  } finally {
    // Leave nothing behind on the server; the answer does not matter.
    if (http.sessionId !== undefined) await (await http.send('terminate', 'DELETE', { evenWhenStopped: true })).close();
    http.budget.dispose();
  }
  if (http.stopped)
    findings.notes = [
      ...(findings.notes ?? []),
      'stopped at its deadline: what it had not decided by then is untested',
    ];
  if (!options.streams.includes('request'))
    findings.conditions = allConditions('not_applicable', 'not probed (--streams leaves request streams out)');
  const requestVerdict = decideVerdict(findings.conditions);
  const verdict = combineVerdicts([requestVerdict, standalone.verdict]);
  return safeReport({
    schema: 'forkwatch.probe/v1',
    target: displayTarget(options.url),
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    verdict,
    exitCode: EXIT_CODES[verdict],
    summary: summarize(verdict, findings.conditions, standalone),
    protocol: {
      requested: options.protocolVersion,
      negotiated: findings.negotiated ?? null,
      ...(findings.serverSupported ? { serverSupported: findings.serverSupported } : {}),
    },
    session: { id: http.sessionId ?? null },
    cursor: {
      real: findings.cursor ?? null,
      expectedEventId: findings.expectedEventId ?? null,
      bogus: findings.bogus ?? null,
    },
    conditions: findings.conditions,
    resumes: summarizeResumes(findings.resumes ?? []),
    streams: { request: { verdict: requestVerdict }, standalone },
    steps: http.steps,
    notes: findings.notes ?? [],
  });
}

/** The standalone stream, once the session is open; otherwise what stopped the probe, for this stream too. */
async function standaloneOf(
  http: McpHttp,
  options: ProbeOptions,
  findings: Findings,
  progress: ProgressSink,
): Promise<StandaloneReport> {
  if (findings.serverCapabilities === undefined) {
    const { status, detail } = findings.conditions.event_ids;
    return standaloneReport(allStandalone(status, detail));
  }
  if (!options.streams.includes('standalone'))
    return standaloneReport(allStandalone('not_applicable', 'not probed (--streams leaves the standalone stream out)'));
  return probeStandalone({
    http,
    serverCapabilities: findings.serverCapabilities,
    resumes: options.resumes,
    waitMs: Math.min(options.timeoutMs, STANDALONE_WAIT_MS),
    progress,
    request: { resumes: summarizeResumes(findings.resumes ?? []) },
    ...(options.notifyTool !== undefined ? { notifyTool: options.notifyTool } : {}),
    ...(options.notifyArgs !== undefined ? { notifyArgs: options.notifyArgs } : {}),
  });
}

async function probe(http: McpHttp, options: ProbeOptions, progress: ProgressSink): Promise<Findings> {
  progress('opening a session');
  const session = await openSession(http, options.protocolVersion);
  if (session.kind === 'stop') return session;
  const found = {
    negotiated: session.negotiated,
    notes: session.notes,
    serverCapabilities: session.serverCapabilities,
  };
  if (!options.streams.includes('request'))
    return { ...found, conditions: allConditions('not_applicable', 'not probed') };
  const book = new ConditionBook(allConditions('not_tested', 'not reached'), () => http.stopped);
  const more = await requestStreams(http, options, session, book, progress);
  return { ...found, ...more, conditions: book.final() };
}

type OpenSession = Extract<SessionOutcome, { kind: 'open' }>;
type RequestFindings = Pick<Findings, 'cursor' | 'expectedEventId' | 'bogus' | 'resumes'>;

/** The request stream's four conditions, into `book`: a ping's stream for the cursor, then the pipelined resumes. */
async function requestStreams(
  http: McpHttp,
  options: ProbeOptions,
  session: OpenSession,
  book: ConditionBook<ConditionName>,
  progress: ProgressSink,
): Promise<RequestFindings> {
  const stopHere = (c: ConditionResult): RequestFindings => {
    for (const name of Object.keys(allConditions('not_tested', ''))) book.set(name as ConditionName, c);
    return {};
  };
  progress('getting a cursor (ping)');
  // The ping's SSE stream: the cursor (priming id) and the frame that must follow it (the response).
  const ping = await http.send('ping', 'POST', { message: { jsonrpc: '2.0', id: PING_ID, method: 'ping' } });
  if (ping.status === 0) return stopHere({ status: 'not_tested', detail: `ping: ${ping.error}` });
  const ok = ping.status >= 200 && ping.status < 300;
  if (ok && ping.mediaType === 'application/json') {
    // Not applicable only on a real JSON-RPC answer: a malformed one proves nothing.
    const read = await http.readResponse(ping, PING_ID, http.deadline());
    if (read.message !== undefined) return stopHere(withoutPostStreams().event_ids);
    const detail = `ping answered ${ping.status} JSON without its response (${read.error}): a malformed answer`;
    return stopHere({ status: 'not_tested', detail });
  }
  if (!ok || ping.mediaType !== 'text/event-stream') {
    await ping.close();
    return stopHere({ status: 'not_tested', detail: `ping answered ${ping.status} ${shownType(ping)}` });
  }
  const pingRead = await http.readResponse(ping, PING_ID, http.deadline());
  if (pingRead.message === undefined)
    return stopHere({ status: 'not_tested', detail: `ping response did not arrive: ${pingRead.error}` });
  const stream = inspectPingStream(pingRead.frames, session.negotiated);
  book.set('event_ids', stream.condition);

  const allIds = [...session.initFrames, ...pingRead.frames].flatMap(f => (f.id ? [f.id] : []));
  const bogus = bogusCursor(imitable(stream.cursor ?? stream.responseId), new Set(allIds));
  const found = { expectedEventId: stream.responseId, bogus } as RequestFindings;
  const realCursor = stream.cursor;
  if (realCursor === undefined) {
    const why =
      stream.condition.status === 'pass'
        ? 'no cursor to resume from: the ping stream had no event id before its response'
        : 'no cursor to resume from (see event ids)';
    book.set('replay', { status: 'not_tested', detail: why });
    book.set('repeated_resumes', { status: 'not_tested', detail: why });
    const shape = stream.responseId;
    book.set('bogus_cursor_refused', await checkBogusCursor(http, bogus, { stream: 'request', realCursor: shape }));
    return found;
  }

  // A replay must not start with anything consumed up to the cursor.
  const consumed = new Set([...session.initFrames.flatMap(f => (f.id ? [f.id] : [])), ...stream.idsUpToCursor]);
  const target: ResumeTarget = {
    cursor: realCursor,
    responseTo: PING_ID,
    ...(stream.responseId !== undefined ? { responseId: stream.responseId } : {}),
    consumedUpToCursor: consumed,
  };
  // One more ping per repeated resume: each resume continues a stream of its own, so none waits for the server
  // (or a balancer that holds closed connections open) to release the probe's previous connection (a 409).
  progress('getting cursors for the repeated resumes');
  const repeatTargets = await repeatedTargets(http, options.resumes, session.negotiated, consumed, target);
  // The replay, the bogus cursor and the K repeated resumes, pipelined (pipeline.ts).
  const total = options.resumes + 2;
  progress(`resumes: 0/${total} answered`);
  const tasks: PipelineTask<ResumeAttempt | ConditionResult>[] = [
    turn => resumeOnce(http, 'resume', 1, target, turn),
    turn => checkBogusCursor(http, bogus, { stream: 'request', realCursor, turn }),
  ];
  for (let k = 1; k <= options.resumes; k++)
    tasks.push(turn => resumeOnce(http, `resume_repeat_${k}`, k, repeatTargets[k - 1]!, turn));
  const [first, bogusResult, ...attempts] = await runPipelined(tasks, done =>
    progress(`resumes: ${done}/${total} answered`),
  );
  const resumes = attempts as ResumeAttempt[];
  book.set('replay', replayCondition(first as ResumeAttempt, target, { attempts: resumes, targets: repeatTargets }));
  book.set('bogus_cursor_refused', bogusResult as ConditionResult);
  book.set('repeated_resumes', repeatedCondition(resumes, repeatTargets));
  return { ...found, cursor: realCursor, resumes };
}

/** A cursor the never-issued one may imitate: none when a client could not send it (bogus-cursor.ts's shapeless one). */
function imitable(id: string | undefined): string | undefined {
  return id !== undefined && isSendableId(id) && !isOversizedKey(id) ? id : undefined;
}

/**
 * The targets of the K repeated resumes: one ping each, assigned so that consecutive resumes continue pings sent in
 * the same order and in swapped order by turns (0 1 3 2 4 5 7 6 …). Behind a balancer without affinity, some
 * resumes then reach another process than the one that served their ping whatever the balancer's cycle, as with
 * one shared cursor. A ping without a cursor falls back to the first ping's stream, and so do all after a ping that
 * got no answer (a server that stops answering must not hold the probe one --timeout per ping).
 */
async function repeatedTargets(
  http: McpHttp,
  count: number,
  negotiated: string,
  consumed: ReadonlySet<string>,
  fallback: ResumeTarget,
): Promise<ResumeTarget[]> {
  const pinged: ResumeTarget[] = [];
  let answering = true;
  for (let k = 0; k < count; k++) {
    const id = `${PING_ID}-${k + 1}`;
    const read = answering ? await pingOnce(http, `ping_${k + 1}`, id) : undefined;
    if (read === undefined) answering = false;
    const stream = read !== undefined ? inspectPingStream(read, negotiated) : undefined;
    pinged.push(
      stream?.cursor !== undefined
        ? {
            cursor: stream.cursor,
            responseTo: id,
            ...(stream.responseId !== undefined ? { responseId: stream.responseId } : {}),
            consumedUpToCursor: new Set([...consumed, ...stream.idsUpToCursor]),
          }
        : fallback,
    );
  }
  return pinged.map((_, k) => {
    const swapped = k ^ ((k >> 1) & 1);
    return pinged[swapped < count ? swapped : k]!;
  });
}

/** One more ping's SSE frames, its response last; undefined when none came. */
async function pingOnce(http: McpHttp, step: string, id: string) {
  const exchange = await http.send(step, 'POST', { message: { jsonrpc: '2.0', id, method: 'ping' } });
  if (exchange.status < 200 || exchange.status >= 300 || exchange.mediaType !== 'text/event-stream') {
    await exchange.close();
    return undefined;
  }
  const read = await http.readResponse(exchange, id, http.deadline());
  return read.message !== undefined ? read.frames : undefined;
}
