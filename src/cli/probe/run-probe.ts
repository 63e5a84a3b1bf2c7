/**
 * The probe itself: opens a session like a client would, obtains a real cursor (the priming id of a `ping`
 * stream), then checks the four conditions of resumability and ends the session.
 */
import { displayEventId } from '../../core/event-id';
import { bogusCursor } from './bogus-cursor';
import { McpHttp } from './mcp-http';
import { FIRST_UNRESUMABLE_VERSION, RESUMABLE_PROTOCOL_VERSIONS, type ProbeOptions, displayTarget } from './options';
import {
  type ConditionName,
  type ConditionResult,
  type ProbeReport,
  type ResumeAttempt,
  EXIT_CODES,
  allConditions,
  decideVerdict,
  summarizeResumes,
} from './report';
import { type ResumeTarget, checkBogusCursor, resumeOnce } from './resume';
import type { SseFrame } from './sse-reader';

export const PROBE_CLIENT_INFO = { name: 'forkwatch-probe', version: '1' };
const INITIALIZE_ID = 'forkwatch-probe-initialize';
const PING_ID = 'forkwatch-probe-ping';

interface Findings {
  conditions: Record<ConditionName, ConditionResult>;
  negotiated: string | null;
  serverSupported?: string[];
  cursor: string | null;
  expectedEventId: string | null;
  bogus: string | null;
  resumes: ResumeAttempt[];
  notes: string[];
}

export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const startedAt = new Date();
  const http = new McpHttp(options.url, options.headers, options.timeoutMs);
  let findings: Findings;
  try {
    findings = await probe(http, options);
  } finally {
    // Leave nothing behind on the server; the answer does not matter.
    if (http.sessionId !== undefined) await (await http.send('terminate', 'DELETE')).close();
  }
  const verdict = decideVerdict(findings.conditions);
  const resumes = summarizeResumes(findings.resumes);
  return {
    schema: 'forkwatch.probe/v1',
    target: displayTarget(options.url),
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    verdict,
    exitCode: EXIT_CODES[verdict],
    summary: summarize(verdict, findings),
    protocol: {
      requested: options.protocolVersion,
      negotiated: findings.negotiated,
      ...(findings.serverSupported ? { serverSupported: findings.serverSupported } : {}),
    },
    session: { id: http.sessionId ?? null },
    cursor: { real: findings.cursor, expectedEventId: findings.expectedEventId, bogus: findings.bogus },
    conditions: findings.conditions,
    resumes,
    steps: http.steps,
    notes: findings.notes,
  };
}

async function probe(http: McpHttp, options: ProbeOptions): Promise<Findings> {
  const notes: string[] = [];
  const findings = (conditions: Record<ConditionName, ConditionResult>, extra: Partial<Findings> = {}): Findings => ({
    conditions,
    negotiated: null,
    cursor: null,
    expectedEventId: null,
    bogus: null,
    resumes: [],
    notes,
    ...extra,
  });

  // 1. initialize
  const init = await http.send('initialize', 'POST', {
    message: {
      jsonrpc: '2.0',
      id: INITIALIZE_ID,
      method: 'initialize',
      params: { protocolVersion: options.protocolVersion, capabilities: {}, clientInfo: PROBE_CLIENT_INFO },
    },
  });
  if (init.status === 0) return findings(allConditions('not_tested', `initialize: ${init.error}`));
  if (init.status === 401 || init.status === 403) {
    await init.close();
    const challenge = init.headers?.get('www-authenticate');
    return findings(
      allConditions(
        'not_tested',
        `initialize answered ${init.status}: not authorized${challenge ? ` (${challenge})` : ''}; pass --bearer or -H 'Name: value'`,
      ),
    );
  }
  if (init.status >= 300 && init.status < 400) {
    await init.close();
    const location = init.headers?.get('location');
    return findings(allConditions('not_tested', `initialize answered ${init.status}${location ? ` → ${location}` : ''}: probe the final URL`));
  }
  const initRead = await http.readResponse(init, INITIALIZE_ID, http.deadline());
  const initError = initRead.message?.error as { message?: string; data?: { supported?: unknown } } | undefined;
  if (initError !== undefined || init.status < 200 || init.status >= 300) {
    const supported = Array.isArray(initError?.data?.supported) ? initError.data.supported.filter(isString) : undefined;
    const message = initError?.message ?? initRead.error ?? '';
    if (supported && supported.length > 0 && supported.every(v => v >= FIRST_UNRESUMABLE_VERSION)) {
      return findings(
        allConditions('not_applicable', `server speaks only ${supported.join(', ')}: no sessions, no Last-Event-ID resumption`),
        { serverSupported: supported },
      );
    }
    return findings(allConditions('not_tested', `initialize answered ${init.status}: ${message}`.trim()), {
      ...(supported ? { serverSupported: supported } : {}),
    });
  }
  const result = initRead.message?.result as { protocolVersion?: unknown } | undefined;
  const negotiated = isString(result?.protocolVersion) ? result.protocolVersion : null;
  if (negotiated === null) return findings(allConditions('not_tested', 'initialize result carries no protocolVersion'));
  if (negotiated >= FIRST_UNRESUMABLE_VERSION || !(RESUMABLE_PROTOCOL_VERSIONS as readonly string[]).includes(negotiated)) {
    return findings(allConditions('not_applicable', `server negotiated ${negotiated}, which has no Last-Event-ID resumption`), {
      negotiated,
    });
  }
  http.sessionId = init.headers?.get('mcp-session-id') ?? undefined;
  http.protocolVersion = negotiated;
  if (http.sessionId === undefined) notes.push('no Mcp-Session-Id: the server runs without sessions');
  if (negotiated !== options.protocolVersion) notes.push(`asked for ${options.protocolVersion}, server chose ${negotiated}`);
  const seenIds = idsOf(initRead.frames);

  // 2. notifications/initialized
  const initialized = await http.send('initialized', 'POST', { message: { jsonrpc: '2.0', method: 'notifications/initialized' } });
  await initialized.close();
  if (initialized.status < 200 || initialized.status >= 300) {
    notes.push(`notifications/initialized answered ${initialized.status || initialized.error}`);
  }

  // 3. ping: its SSE stream gives the cursor (priming id) and the frame that must follow it (the response)
  const ping = await http.send('ping', 'POST', { message: { jsonrpc: '2.0', id: PING_ID, method: 'ping' } });
  const base = { negotiated };
  if (ping.status === 0) return findings(allConditions('not_tested', `ping: ${ping.error}`), base);
  if (ping.status < 200 || ping.status >= 300) {
    await ping.close();
    return findings(allConditions('not_tested', `ping answered ${ping.status}`), base);
  }
  if (ping.mediaType === 'application/json') {
    await ping.close();
    return findings(await withoutPostStreams(http), base);
  }
  if (ping.mediaType !== 'text/event-stream') {
    await ping.close();
    return findings(allConditions('not_tested', `ping answered ${ping.status} with ${ping.mediaType || 'no content type'}`), base);
  }
  const pingRead = await http.readResponse(ping, PING_ID, http.deadline());
  if (pingRead.message === undefined) {
    return findings(allConditions('not_tested', `ping response did not arrive: ${pingRead.error}`), base);
  }
  const stream = inspectPingStream(pingRead.frames, negotiated);
  for (const id of stream.idsUpToCursor) seenIds.add(id);

  // 4. conditions 2-4
  const bogus = bogusCursor(stream.cursor ?? stream.responseId, new Set([...seenIds, ...idsOf(pingRead.frames)]));
  const noCursor: ConditionResult = {
    status: 'not_tested',
    detail: 'no cursor to resume from: the ping stream had no event id before its response',
  };
  let replay = noCursor;
  let repeated = noCursor;
  const attempts: ResumeAttempt[] = [];
  let bogusResult: ConditionResult;
  if (stream.cursor !== undefined) {
    const target: ResumeTarget = { cursor: stream.cursor, responseTo: PING_ID, consumedUpToCursor: seenIds };
    const first = await resumeOnce(http, 'resume', 1, target);
    replay = replayCondition(first);
    bogusResult = await checkBogusCursor(http, bogus);
    for (let k = 1; k <= options.resumes; k++) attempts.push(await resumeOnce(http, `resume_repeat_${k}`, k, target));
    repeated = repeatedCondition(attempts);
  } else {
    bogusResult = await checkBogusCursor(http, bogus);
  }
  return findings(
    { event_ids: stream.condition, replay, bogus_cursor_refused: bogusResult, repeated_resumes: repeated },
    { ...base, cursor: stream.cursor ?? null, expectedEventId: stream.responseId ?? null, bogus, resumes: attempts },
  );
}

/** POSTs answer with JSON: SSE can only come from the standalone GET stream, if there is one. */
async function withoutPostStreams(http: McpHttp): Promise<Record<ConditionName, ConditionResult>> {
  const get = await http.send('standalone_get', 'GET');
  await get.close();
  if (get.status === 405) {
    return allConditions('not_applicable', 'server offers no SSE (POSTs answered with JSON, GET with 405): there is no stream to resume');
  }
  const detail =
    get.status >= 200 && get.status < 300
      ? 'POSTs are answered with JSON; only the standalone GET stream is SSE, and the probe cannot make the server send on it'
      : `POSTs are answered with JSON and GET with ${get.status || get.error}`;
  return allConditions('not_tested', detail);
}

interface PingStream {
  condition: ConditionResult;
  /** The last id before the response frame (the priming id on 2025-11-25 servers). */
  cursor?: string;
  responseId?: string;
  idsUpToCursor: string[];
}

function inspectPingStream(frames: SseFrame[], negotiated: string): PingStream {
  const response = frames[frames.length - 1]!;
  const before = frames.slice(0, -1);
  const primingIndex = before.findIndex(f => !!f.id && f.data.trim() === '');
  let cursorIndex = -1;
  before.forEach((f, i) => f.id && (cursorIndex = i));
  const cursor = cursorIndex >= 0 ? before[cursorIndex]!.id : undefined;
  const responseId = response.id ? response.id : undefined;
  const idsUpToCursor = idsOfList(before.slice(0, cursorIndex + 1));
  const evidence = {
    primingId: primingIndex >= 0 ? before[primingIndex]!.id! : null,
    responseId: responseId ?? null,
    frames: frames.map(f => ({ id: f.id === undefined ? null : f.id, data: f.data === '' ? 'empty' : 'message' })),
  };
  const needsPriming = negotiated >= '2025-11-25';
  let condition: ConditionResult;
  if (responseId === undefined && cursor === undefined) {
    condition = { status: 'fail', detail: 'no event ids: no priming event and an id-less response, so nothing on the stream can be resumed', evidence };
  } else if (responseId === undefined) {
    condition = { status: 'fail', detail: 'the response frame carries no event id', evidence };
  } else if (needsPriming && primingIndex < 0) {
    condition = { status: 'fail', detail: `no priming event on a ${negotiated} stream: a stream lost before its response has no cursor`, evidence };
  } else {
    const priming = evidence.primingId ? `priming id ${displayEventId(evidence.primingId)}, ` : '';
    condition = { status: 'pass', detail: `${priming}response id ${displayEventId(responseId)}`, evidence };
  }
  return { condition, ...(cursor ? { cursor } : {}), ...(responseId ? { responseId } : {}), idsUpToCursor };
}

function replayCondition(attempt: ResumeAttempt): ConditionResult {
  const evidence = { attempt };
  const status = attempt.status ?? 'no answer';
  switch (attempt.outcome) {
    case 'resumed':
      return { status: 'pass', detail: `${status}, ${attempt.detail} (${attempt.ms} ms)`, evidence };
    case 'forked':
    case 'rejected':
      return { status: 'fail', detail: `a real cursor ${attempt.outcome === 'rejected' ? 'was refused: ' : 'forked: '}${attempt.detail}`, evidence };
    default:
      return { status: 'not_tested', detail: attempt.detail, evidence };
  }
}

function repeatedCondition(attempts: ResumeAttempt[]): ConditionResult {
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

function summarize(verdict: ProbeReport['verdict'], f: Findings): string {
  switch (verdict) {
    case 'resumable':
      return 'resumable: resumes replay the lost events and unknown cursors are refused';
    case 'not_resumable': {
      const failed = (Object.keys(f.conditions) as ConditionName[]).filter(n => f.conditions[n].status === 'fail');
      return `not resumable: ${failed.join(', ')} failed`;
    }
    case 'not_applicable':
      return `not applicable: ${f.conditions.event_ids.detail}`;
    default:
      return `could not test: ${firstUntested(f.conditions)}`;
  }
}

function firstUntested(conditions: Record<ConditionName, ConditionResult>): string {
  return Object.values(conditions).find(c => c.status === 'not_tested')?.detail ?? 'unknown';
}

function idsOf(frames: SseFrame[]): Set<string> {
  return new Set(idsOfList(frames));
}

function idsOfList(frames: SseFrame[]): string[] {
  return frames.flatMap(f => (f.id ? [f.id] : []));
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}
