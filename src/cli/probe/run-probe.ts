/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe itself: opens a session like a client would; on the request stream, obtains a real cursor (the
 * priming id of a `ping` stream, followed on that stream by the ping's response) and checks the four conditions;
 * then probes the standalone GET stream (standalone.ts); and ends the session.
 */
import { bogusCursor } from './bogus-cursor';
import { inspectPingStream, repeatedCondition, replayCondition, summarize, withoutPostStreams } from './conditions';
import { McpHttp } from './mcp-http';
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
import { openSession } from './session';

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

/**
 * `stop` ends the probe early (the exporter's per-probe deadline): exchanges in flight are cut, the session is
 * still ended, and nothing the cut caused counts as a failure: the verdict is untestable.
 */
export async function runProbe(
  options: ProbeOptions,
  progress: ProgressSink = () => undefined,
  stop?: AbortSignal,
): Promise<ProbeReport> {
  const startedAt = new Date();
  const http = new McpHttp(options.url, options.headers, options.timeoutMs, stop);
  let findings: Findings;
  let standalone: StandaloneReport;
  try {
    findings = await probe(http, options, progress);
    standalone = await standaloneOf(http, options, findings, progress);
  } finally {
    // Leave nothing behind on the server; the answer does not matter.
    if (http.sessionId !== undefined) await (await http.send('terminate', 'DELETE', { evenWhenStopped: true })).close();
  }
  if (http.stopped) {
    const cut = 'the probe reached its deadline before deciding this';
    findings.conditions = withoutFailures(findings.conditions, cut);
    standalone = standaloneReport(withoutFailures(standalone.conditions, cut), standalone);
    findings.notes = [...(findings.notes ?? []), 'stopped at its deadline: the verdict is untestable'];
  }
  if (!options.streams.includes('request'))
    findings.conditions = allConditions('not_applicable', 'not probed (--streams leaves request streams out)');
  const requestVerdict = decideVerdict(findings.conditions);
  const verdict = combineVerdicts([requestVerdict, standalone.verdict]);
  return {
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
  };
}

/** A cut exchange proves nothing: what failed becomes not tested. */
function withoutFailures<T extends Record<string, ConditionResult>>(conditions: T, detail: string): T {
  const out: Record<string, ConditionResult> = {};
  for (const [name, c] of Object.entries(conditions))
    out[name] = c.status === 'fail' || c.status === 'pass' ? { status: 'not_tested', detail } : c;
  return out as T;
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
    ...(options.notifyTool !== undefined ? { notifyTool: options.notifyTool } : {}),
    ...(options.notifyArgs !== undefined ? { notifyArgs: options.notifyArgs } : {}),
  });
}

async function probe(http: McpHttp, options: ProbeOptions, progress: ProgressSink): Promise<Findings> {
  progress('opening a session');
  const session = await openSession(http, options.protocolVersion);
  if (session.kind === 'stop') return session;
  const { negotiated, notes, serverCapabilities } = session;
  const stop = (conditions: Record<ConditionName, ConditionResult>): Findings => ({
    conditions,
    negotiated,
    notes,
    serverCapabilities,
  });
  if (!options.streams.includes('request')) return stop(allConditions('not_applicable', 'not probed'));

  progress('getting a cursor (ping)');
  // The ping's SSE stream: the cursor (priming id) and the frame that must follow it (the response).
  const ping = await http.send('ping', 'POST', { message: { jsonrpc: '2.0', id: PING_ID, method: 'ping' } });
  if (ping.status === 0) return stop(allConditions('not_tested', `ping: ${ping.error}`));
  if (ping.status < 200 || ping.status >= 300 || ping.mediaType !== 'text/event-stream') {
    await ping.close();
    if (ping.status >= 200 && ping.status < 300 && ping.mediaType === 'application/json') {
      return stop(withoutPostStreams());
    }
    return stop(
      allConditions('not_tested', `ping answered ${ping.status} ${ping.mediaType || 'without content type'}`),
    );
  }
  const pingRead = await http.readResponse(ping, PING_ID, http.deadline());
  if (pingRead.message === undefined)
    return stop(allConditions('not_tested', `ping response did not arrive: ${pingRead.error}`));
  const stream = inspectPingStream(pingRead.frames, negotiated);

  const allIds = [...session.initFrames, ...pingRead.frames].flatMap(f => (f.id ? [f.id] : []));
  const bogus = bogusCursor(stream.cursor ?? stream.responseId, new Set(allIds));
  const found = { negotiated, notes, serverCapabilities, expectedEventId: stream.responseId, bogus };
  if (stream.cursor === undefined) {
    const noCursor: ConditionResult = {
      status: 'not_tested',
      detail: 'no cursor to resume from: the ping stream had no event id before its response',
    };
    const bogusResult = await checkBogusCursor(http, bogus);
    return {
      ...found,
      conditions: {
        event_ids: stream.condition,
        replay: noCursor,
        bogus_cursor_refused: bogusResult,
        repeated_resumes: noCursor,
      },
    };
  }

  // A replay must not start with anything consumed up to the cursor.
  const consumed = new Set([...session.initFrames.flatMap(f => (f.id ? [f.id] : [])), ...stream.idsUpToCursor]);
  const target: ResumeTarget = { cursor: stream.cursor, responseTo: PING_ID, consumedUpToCursor: consumed };
  // One more ping per repeated resume: each resume continues a stream of its own, so none waits for the server
  // (or a balancer that holds closed connections open) to release the probe's previous connection (a 409).
  progress('getting cursors for the repeated resumes');
  const repeatTargets = await repeatedTargets(http, options.resumes, negotiated, consumed, target);
  // The replay, the bogus cursor and the K repeated resumes, pipelined (pipeline.ts).
  const total = options.resumes + 2;
  progress(`resumes: 0/${total} answered`);
  const tasks: PipelineTask<ResumeAttempt | ConditionResult>[] = [
    turn => resumeOnce(http, 'resume', 1, target, turn),
    turn => checkBogusCursor(http, bogus, turn),
  ];
  for (let k = 1; k <= options.resumes; k++)
    tasks.push(turn => resumeOnce(http, `resume_repeat_${k}`, k, repeatTargets[k - 1]!, turn));
  const [first, bogusResult, ...attempts] = await runPipelined(tasks, done =>
    progress(`resumes: ${done}/${total} answered`),
  );
  const replay = replayCondition(first as ResumeAttempt);
  return {
    ...found,
    cursor: stream.cursor,
    resumes: attempts as ResumeAttempt[],
    conditions: {
      event_ids: stream.condition,
      replay,
      bogus_cursor_refused: bogusResult as ConditionResult,
      repeated_resumes: repeatedCondition(attempts as ResumeAttempt[]),
    },
  };
}

/**
 * The targets of the K repeated resumes: one ping each, assigned so that consecutive resumes continue pings sent in
 * the same order and in swapped order by turns (0 1 3 2 4 5 7 6 …). Behind a balancer without affinity, some
 * resumes then reach another process than the one that served their ping whatever the balancer's cycle, as with
 * one shared cursor. A ping without a cursor falls back to the first ping's stream.
 */
async function repeatedTargets(
  http: McpHttp,
  count: number,
  negotiated: string,
  consumed: ReadonlySet<string>,
  fallback: ResumeTarget,
): Promise<ResumeTarget[]> {
  const pinged: ResumeTarget[] = [];
  for (let k = 0; k < count; k++) {
    const id = `${PING_ID}-${k + 1}`;
    const exchange = await http.send(`ping_${k + 1}`, 'POST', { message: { jsonrpc: '2.0', id, method: 'ping' } });
    const read =
      exchange.status >= 200 && exchange.status < 300 && exchange.mediaType === 'text/event-stream'
        ? await http.readResponse(exchange, id, http.deadline())
        : (await exchange.close(), undefined);
    const stream = read?.message !== undefined ? inspectPingStream(read.frames, negotiated) : undefined;
    pinged.push(
      stream?.cursor !== undefined
        ? { cursor: stream.cursor, responseTo: id, consumedUpToCursor: new Set([...consumed, ...stream.idsUpToCursor]) }
        : fallback,
    );
  }
  return pinged.map((_, k) => {
    const swapped = k ^ ((k >> 1) & 1);
    return pinged[swapped < count ? swapped : k]!;
  });
}
