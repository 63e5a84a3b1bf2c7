/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The drill's proxy: passes every request to the upstream unchanged, watches each SSE response with the core's
 * bounded frame observer (what the upstream sent, and what the client got), cuts a chosen stream in the middle of a
 * frame, and does the chosen fault with that session's next resume. It survives any request and any upstream:
 * bodies stream with backpressure, ids are clipped, records are capped, and an upstream that never answers gets 504.
 */
import {
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
  createServer,
} from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { clip } from '../../core/clip';
import { SseFrameObserver } from '../../core/sse-frame-observer';
import { hashSessionId } from '../../shared/session-id';
import type { DrillOptions } from './options';

/** Records kept of streams and faulted requests; a drill left running keeps the first ones and counts the rest. */
const MAX_RECORDS = 500;
/** Event ids kept per stream: the first ones and the last ones, each clipped. */
const FIRST_IDS = 8;
const LAST_IDS = 4;
const ID_CHARS = 80;
/** Past the cut point, the stream is cut on its next chunk, or after this long without one (a quiet stream). */
const CUT_WAIT_MS = 250;
const HOLD_COMMENT_EVERY_MS = 5_000;
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
  // Identity bodies only, so that the frames can be counted.
  'accept-encoding',
]);

export type StreamKind = 'get' | 'resume' | 'post';

export interface StreamRecord {
  n: number;
  kind: StreamKind;
  method: string;
  /** sha-256 prefix of Mcp-Session-Id, as forkwatch's spans carry it (`forkwatch.session.hash`). */
  session: string | undefined;
  lastEventId: string | undefined;
  to: 'upstream' | 'reroute' | 'drill';
  status: number | undefined;
  fault: 'cut' | 'rerouted' | 'passed' | 'held' | 'dropped' | undefined;
  framesSent: number;
  framesArrived: number;
  firstIds: string[];
  lastIds: string[];
  idsArrived: number;
  ended: 'open' | 'ended' | 'cut' | 'client closed' | 'upstream failed' | 'held' | 'dropped' | 'timed out';
}

export interface DrillState {
  records: StreamRecord[];
  recordsLeftOut: number;
  requests: number;
  cuts: number;
  resumesFaulted: number;
}

export interface DrillProxy {
  url: string;
  state: DrillState;
  close(): Promise<void>;
}

export interface DrillEvents {
  /** A line for the live log: a cut, a resume and what was done with it. */
  log(line: string): void;
  /** A resume of a cut stream was answered (or dropped): the stop-after count. */
  resumeFaulted(): void;
  /**
   * A later resume of a stream the drill cut, after its fault was done (the client's retry of a refused or empty
   * resume): passed to --upstream; the settle wait starts again so that what it counts is seen.
   */
  resumeRetried?(): void;
}

function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export async function startDrillProxy(options: DrillOptions, events: DrillEvents): Promise<DrillProxy> {
  const drill = new Drill(options, events);
  const server = createServer((req, res) => drill.handle(req, res));
  server.maxConnections = 512;
  server.on('connection', socket => drill.track(socket));
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => undefined);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const path = options.upstream.pathname === '/' ? '' : options.upstream.pathname;
  return {
    url: `http://${host}:${port}${path}`,
    state: drill.state,
    async close() {
      drill.stop();
      await new Promise<void>(resolve => server.close(() => resolve()));
    },
  };
}

/** The drill's state and every request's handling: what is recorded, which session is armed, the timers to clear. */
class Drill {
  readonly state: DrillState = { records: [], recordsLeftOut: 0, requests: 0, cuts: 0, resumesFaulted: 0 };
  faultsLeft: number;
  /** Sessions whose stream was cut: their next resume gets the fault. */
  readonly armed = new Set<string>();
  /** Sessions whose stream was cut, fault done or not: their later resumes are the client's retries. */
  readonly cutSessions = new Set<string>();
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly options: DrillOptions,
    readonly events: DrillEvents,
  ) {
    this.faultsLeft = options.faults;
  }

  track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }

  /** Every timer and connection ends (the server closes after). */
  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const s of this.sockets) s.destroy();
  }

  later(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  cancel(t: NodeJS.Timeout | undefined): void {
    if (t === undefined) return;
    clearTimeout(t);
    this.timers.delete(t);
  }

  record(r: Omit<StreamRecord, 'n'>): StreamRecord {
    const { state } = this;
    const full = { n: state.records.length + state.recordsLeftOut + 1, ...r };
    if (state.records.length < MAX_RECORDS) state.records.push(full);
    else state.recordsLeftOut++;
    return full;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const { options } = this;
    this.state.requests++;
    req.on('error', () => res.destroy());
    const path = req.url ?? '';
    // Origin-form paths only: an absolute-form or authority-form target could point the drill at another host.
    if (!path.startsWith('/')) {
      req.resume();
      res.writeHead(400, { 'content-type': 'text/plain' }).end('forkwatch drill: origin-form request targets only\n');
      return;
    }
    const lastEventId = header(req, 'last-event-id');
    const session = sessionOf(req) ?? '';
    if (req.method === 'GET' && lastEventId !== undefined && this.armed.has(session)) {
      this.armed.delete(session);
      this.faultResume(req, res);
      return;
    }
    if (req.method === 'GET' && lastEventId !== undefined) {
      // Every resume is recorded with its cursor, answered with a stream or not (a 400 or 404 is what it shows).
      const r = this.resumeRecord(req, 'upstream', undefined);
      if (this.cutSessions.has(session)) {
        this.events.log(`resume  ${describe(r)} → passed to --upstream (a retry: the fault was done)`);
        this.events.resumeRetried?.();
      }
      this.proxy(req, res, options.upstream, r, false);
      return;
    }
    const kind: StreamKind = req.method === 'GET' ? 'get' : 'post';
    this.proxy(req, res, options.upstream, undefined, options.streams === 'all' || options.streams === kind);
  }

  /** The resume of a cut stream: dropped, held, rerouted or passed, as the drill was told. */
  private faultResume(req: IncomingMessage, res: ServerResponse): void {
    const { options, events } = this;
    const resume = options.resume;
    if (resume === 'drop') {
      const r = this.resumeRecord(req, 'drill', 'dropped');
      r.ended = 'dropped';
      events.log(`resume  ${describe(r)} → dropped, unanswered`);
      req.socket.destroy();
    } else if (resume === 'hold') {
      const r = this.resumeRecord(req, 'drill', 'held');
      events.log(`resume  ${describe(r)} → held open with no frames for ${options.holdMs / 1000} s`);
      this.hold(res, r);
    } else {
      const reroute = resume === 'reroute' && options.rerouteUpstream !== undefined;
      const r = this.resumeRecord(req, reroute ? 'reroute' : 'upstream', reroute ? 'rerouted' : 'passed');
      events.log(`resume  ${describe(r)} → ${reroute ? 'rerouted to --reroute-upstream' : 'passed to --upstream'}`);
      this.proxy(req, res, reroute ? options.rerouteUpstream! : options.upstream, r, false);
    }
    this.state.resumesFaulted++;
    events.resumeFaulted();
  }

  private resumeRecord(req: IncomingMessage, to: StreamRecord['to'], fault: StreamRecord['fault']): StreamRecord {
    return this.record({
      ...newStreamRecord('resume', 'GET', sessionOf(req)),
      lastEventId: clip(header(req, 'last-event-id') ?? '', ID_CHARS),
      to,
      fault,
    });
  }

  private hold(res: ServerResponse, r: StreamRecord): void {
    r.status = 200;
    r.ended = 'held';
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': forkwatch drill holds this resume\n\n');
    const beat = setInterval(() => res.write(': hold\n\n'), HOLD_COMMENT_EVERY_MS);
    const end = this.later(this.options.holdMs, () => res.end());
    res.on('close', () => {
      clearInterval(beat);
      this.cancel(end);
    });
  }

  /** Passes the request to `target`; its SSE answer is relayed frame by frame, and cut when `cut` says so. */
  private proxy(req: IncomingMessage, res: ServerResponse, target: URL, r: StreamRecord | undefined, cut: boolean) {
    const url = new URL(`${target.origin}${req.url!}`);
    if (url.origin !== target.origin) {
      res.writeHead(400).end();
      return;
    }
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const upstreamReq = request(url, {
      method: req.method,
      headers: { ...forwardHeaders(req.headers), host: url.host },
    });
    let responded = false;
    const headersTimer = this.later(this.options.upstreamTimeoutMs, () => {
      if (r) r.ended = 'timed out';
      upstreamReq.destroy();
      if (!res.headersSent) res.writeHead(504).end();
      else res.destroy();
    });
    upstreamReq.on('response', upRes => {
      responded = true;
      this.cancel(headersTimer);
      this.answer(req, res, upstreamReq, upRes, r, cut);
    });
    upstreamReq.on('error', () => {
      this.cancel(headersTimer);
      if (r && r.ended === 'open') r.ended = 'upstream failed';
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain' }).end('forkwatch drill: upstream failed\n');
      else res.destroy();
    });
    res.on('close', () => {
      this.cancel(headersTimer);
      if (!responded || !res.writableFinished) upstreamReq.destroy();
    });
    req.pipe(upstreamReq);
    req.on('error', () => upstreamReq.destroy());
  }

  /** The upstream answered: its head goes to the client, then its body, piped or relayed as an SSE stream. */
  private answer(
    req: IncomingMessage,
    res: ServerResponse,
    upstreamReq: ClientRequest,
    upRes: IncomingMessage,
    r: StreamRecord | undefined,
    cut: boolean,
  ): void {
    const sse = String(upRes.headers['content-type'] ?? '').includes('text/event-stream');
    const stream =
      r ??
      (sse
        ? this.record(newStreamRecord(req.method === 'GET' ? 'get' : 'post', req.method ?? '?', sessionOf(req)))
        : undefined);
    if (stream) stream.status = upRes.statusCode;
    if (r?.kind === 'resume' && this.cutSessions.has(r.session ?? ''))
      this.events.log(
        `answer  ${upRes.statusCode} from ${r.to === 'reroute' ? '--reroute-upstream' : '--upstream'} to ${describe(r)}`,
      );
    try {
      res.writeHead(upRes.statusCode ?? 502, forwardHeaders(upRes.headers));
      // An SSE answer's head goes out at once, as the upstream sent it: Node holds a head back until the first body
      // byte, and a resume answered 200 with no frame would reach the client only with the first keep-alive.
      if (sse) res.flushHeaders();
    } catch {
      upRes.destroy();
      if (!res.headersSent) res.writeHead(502).end();
      return;
    }
    if (!sse || !stream) {
      upRes.pipe(res);
      upRes.on('end', () => {
        if (stream && stream.ended === 'open') stream.ended = 'ended';
      });
      upRes.on('error', () => res.destroy());
      return;
    }
    new SseRelay(this, stream, res, upstreamReq, upRes, cut).start();
  }
}

/**
 * One SSE answer relayed chunk by chunk: its frames counted as the upstream sent them and as the client got them,
 * and, when it is the stream chosen, cut in the middle of a frame once it has sent enough events.
 */
class SseRelay {
  private readonly sent = new SseFrameObserver({
    onFrame: () => {
      this.stream.framesSent++;
    },
  });
  private readonly arrived = new SseFrameObserver({ onFrame: id => noteId(this.stream, id) });
  /** This stream is the one chosen, and has not sent enough events yet (checked after each chunk). */
  private cutPending: boolean;
  private cutArmed = false;
  private cutTimer: NodeJS.Timeout | undefined;
  private dropped = false;

  constructor(
    private readonly drill: Drill,
    private readonly stream: StreamRecord,
    private readonly res: ServerResponse,
    private readonly upstreamReq: ClientRequest,
    private readonly upRes: IncomingMessage,
    cut: boolean,
  ) {
    this.cutPending = cut && drill.faultsLeft > 0;
  }

  start(): void {
    const { stream, res, upRes, drill } = this;
    this.arm();
    upRes.on('data', (chunk: Buffer) => {
      if (stream.ended !== 'open') return;
      if (this.cutArmed) {
        this.cut(chunk);
        return;
      }
      this.sent.push(chunk);
      this.arrived.push(chunk);
      if (!res.write(chunk)) {
        upRes.pause();
        res.once('drain', () => upRes.resume());
      }
      this.arm();
    });
    upRes.on('end', () => {
      drill.cancel(this.cutTimer);
      if (stream.ended === 'open') stream.ended = 'ended';
      res.end();
    });
    upRes.on('error', () => {
      drill.cancel(this.cutTimer);
      if (stream.ended === 'open') stream.ended = 'upstream failed';
      res.destroy();
    });
    res.on('close', () => {
      drill.cancel(this.cutTimer);
      if (stream.ended === 'open') stream.ended = 'client closed';
      upRes.destroy();
    });
  }

  /** Enough events sent: the cut comes with the next chunk, or after CUT_WAIT_MS without one. */
  private arm(): void {
    const { drill } = this;
    if (!this.cutPending || this.stream.framesSent < drill.options.cutAfter || drill.faultsLeft <= 0) return;
    this.cutPending = false;
    this.cutArmed = true;
    drill.faultsLeft--;
    this.cutTimer = drill.later(CUT_WAIT_MS, () => this.cut(undefined));
  }

  private cut(rest: Buffer | undefined): void {
    const { drill, stream } = this;
    drill.cancel(this.cutTimer);
    if (stream.ended !== 'open') return;
    stream.ended = 'cut';
    stream.fault = 'cut';
    drill.state.cuts++;
    if (!rest || rest.length === 0) {
      this.drop();
      return;
    }
    // Half of the next chunk goes through, flushed before the connection drops: the client holds a partial
    // frame, as on a dropped connection.
    this.sent.push(rest);
    const half = rest.subarray(0, Math.max(1, Math.floor(rest.length / 2)));
    this.arrived.push(half);
    this.res.write(half, () => this.drop());
    // A client that reads nothing more never flushes the write: drop anyway.
    drill.later(CUT_WAIT_MS, () => this.drop());
  }

  private drop(): void {
    if (this.dropped) return;
    this.dropped = true;
    const { drill, stream } = this;
    drill.armed.add(stream.session ?? '');
    drill.cutSessions.add(stream.session ?? '');
    drill.events.log(
      `cut     ${describe(stream)} after ${stream.framesSent} events sent, ${stream.framesArrived} whole frames arrived (ids ${[...stream.firstIds, ...stream.lastIds].join(' ') || 'none'})`,
    );
    this.res.destroy();
    this.upstreamReq.destroy();
  }
}

function newStreamRecord(kind: StreamKind, method: string, session: string | undefined): Omit<StreamRecord, 'n'> {
  return {
    kind,
    method,
    session,
    lastEventId: undefined,
    to: 'upstream',
    status: undefined,
    fault: undefined,
    framesSent: 0,
    framesArrived: 0,
    firstIds: [],
    lastIds: [],
    idsArrived: 0,
    ended: 'open',
  };
}

function noteId(r: StreamRecord, id: string | undefined): void {
  r.framesArrived++;
  if (id === undefined) return;
  r.idsArrived++;
  const shown = clip(id, ID_CHARS);
  if (r.firstIds.length < FIRST_IDS) r.firstIds.push(shown);
  else {
    r.lastIds.push(shown);
    if (r.lastIds.length > LAST_IDS) r.lastIds.shift();
  }
}

function describe(r: StreamRecord): string {
  return `${r.method}${r.lastEventId !== undefined ? ` Last-Event-ID ${r.lastEventId}` : ''}${r.session ? ` (session ${r.session.slice(0, 8)})` : ''}`;
}

function sessionOf(req: IncomingMessage): string | undefined {
  const id = header(req, 'mcp-session-id');
  return id === undefined ? undefined : hashSessionId(id);
}
