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
import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, createServer } from 'node:http';
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
  const state: DrillState = { records: [], recordsLeftOut: 0, requests: 0, cuts: 0, resumesFaulted: 0 };
  let faultsLeft = options.faults;
  /** Sessions whose stream was cut: their next resume gets the fault. */
  const armed = new Set<string>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
    return t;
  };
  const cancel = (t: NodeJS.Timeout | undefined) => {
    if (t === undefined) return;
    clearTimeout(t);
    timers.delete(t);
  };

  const record = (r: Omit<StreamRecord, 'n'>): StreamRecord => {
    const full = { n: state.records.length + state.recordsLeftOut + 1, ...r };
    if (state.records.length < MAX_RECORDS) state.records.push(full);
    else state.recordsLeftOut++;
    return full;
  };
  const noteId = (r: StreamRecord, id: string | undefined) => {
    r.framesArrived++;
    if (id === undefined) return;
    r.idsArrived++;
    const shown = clip(id, ID_CHARS);
    if (r.firstIds.length < FIRST_IDS) r.firstIds.push(shown);
    else {
      r.lastIds.push(shown);
      if (r.lastIds.length > LAST_IDS) r.lastIds.shift();
    }
  };
  const describe = (r: StreamRecord) =>
    `${r.method}${r.lastEventId !== undefined ? ` Last-Event-ID ${r.lastEventId}` : ''}${r.session ? ` (session ${r.session.slice(0, 8)})` : ''}`;

  const proxy = (req: IncomingMessage, res: ServerResponse, target: URL, r: StreamRecord | undefined, cut: boolean) => {
    const path = req.url!;
    const url = new URL(`${target.origin}${path}`);
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
    const headersTimer = later(options.upstreamTimeoutMs, () => {
      if (r) r.ended = 'timed out';
      upstreamReq.destroy();
      if (!res.headersSent) res.writeHead(504).end();
      else res.destroy();
    });
    upstreamReq.on('response', upRes => {
      responded = true;
      cancel(headersTimer);
      const sse = String(upRes.headers['content-type'] ?? '').includes('text/event-stream');
      const stream =
        r ??
        (sse
          ? record({
              kind: req.method === 'GET' ? 'get' : 'post',
              method: req.method ?? '?',
              session: sessionOf(req),
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
            })
          : undefined);
      if (stream) stream.status = upRes.statusCode;
      try {
        res.writeHead(upRes.statusCode ?? 502, forwardHeaders(upRes.headers));
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
      const sent = new SseFrameObserver({
        onFrame: () => {
          stream.framesSent++;
        },
      });
      const arrived = new SseFrameObserver({ onFrame: id => noteId(stream, id) });
      // Cut when this stream is the one chosen and it has sent enough events (checked after each chunk).
      let cutPending = cut && faultsLeft > 0;
      let cutArmed = false;
      let cutTimer: NodeJS.Timeout | undefined;
      const doCut = (rest: Buffer | undefined) => {
        cancel(cutTimer);
        if (stream.ended !== 'open') return;
        stream.ended = 'cut';
        stream.fault = 'cut';
        state.cuts++;
        let dropped = false;
        const drop = () => {
          if (dropped) return;
          dropped = true;
          armed.add(stream.session ?? '');
          events.log(
            `cut     ${describe(stream)} after ${stream.framesSent} events sent, ${stream.framesArrived} whole frames arrived (ids ${[...stream.firstIds, ...stream.lastIds].join(' ') || 'none'})`,
          );
          res.destroy();
          upstreamReq.destroy();
        };
        if (!rest || rest.length === 0) return drop();
        // Half of the next chunk goes through, flushed before the connection drops: the client holds a partial
        // frame, as on a dropped connection.
        sent.push(rest);
        const half = rest.subarray(0, Math.max(1, Math.floor(rest.length / 2)));
        arrived.push(half);
        res.write(half, drop);
        // A client that reads nothing more never flushes the write: drop anyway.
        later(CUT_WAIT_MS, drop);
      };
      const arm = () => {
        if (!cutPending || stream.framesSent < options.cutAfter || faultsLeft <= 0) return;
        cutPending = false;
        cutArmed = true;
        faultsLeft--;
        cutTimer = later(CUT_WAIT_MS, () => doCut(undefined));
      };
      arm();
      upRes.on('data', (chunk: Buffer) => {
        if (stream.ended !== 'open') return;
        if (cutArmed) return doCut(chunk);
        sent.push(chunk);
        arrived.push(chunk);
        if (!res.write(chunk)) {
          upRes.pause();
          res.once('drain', () => upRes.resume());
        }
        arm();
      });
      upRes.on('end', () => {
        cancel(cutTimer);
        if (stream.ended === 'open') stream.ended = 'ended';
        res.end();
      });
      upRes.on('error', () => {
        cancel(cutTimer);
        if (stream.ended === 'open') stream.ended = 'upstream failed';
        res.destroy();
      });
      res.on('close', () => {
        cancel(cutTimer);
        if (stream.ended === 'open') stream.ended = 'client closed';
        upRes.destroy();
      });
    });
    upstreamReq.on('error', () => {
      cancel(headersTimer);
      if (r && r.ended === 'open') r.ended = 'upstream failed';
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain' }).end('forkwatch drill: upstream failed\n');
      else res.destroy();
    });
    res.on('close', () => {
      cancel(headersTimer);
      if (!responded || !res.writableFinished) upstreamReq.destroy();
    });
    req.pipe(upstreamReq);
    req.on('error', () => upstreamReq.destroy());
  };

  const sessionOf = (req: IncomingMessage) => {
    const id = header(req, 'mcp-session-id');
    return id === undefined ? undefined : hashSessionId(id);
  };

  const resumeRecord = (req: IncomingMessage, to: StreamRecord['to'], fault: StreamRecord['fault']) =>
    record({
      kind: 'resume',
      method: 'GET',
      session: sessionOf(req),
      lastEventId: clip(header(req, 'last-event-id') ?? '', ID_CHARS),
      to,
      status: undefined,
      fault,
      framesSent: 0,
      framesArrived: 0,
      firstIds: [],
      lastIds: [],
      idsArrived: 0,
      ended: 'open',
    });

  const hold = (res: ServerResponse, r: StreamRecord) => {
    r.status = 200;
    r.ended = 'held';
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': forkwatch drill holds this resume\n\n');
    const beat = setInterval(() => res.write(': hold\n\n'), HOLD_COMMENT_EVERY_MS);
    const end = later(options.holdMs, () => res.end());
    res.on('close', () => {
      clearInterval(beat);
      cancel(end);
    });
  };

  const server = createServer((req, res) => {
    state.requests++;
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
    if (req.method === 'GET' && lastEventId !== undefined && armed.has(session)) {
      armed.delete(session);
      const resume = options.resume;
      const done = () => {
        state.resumesFaulted++;
        events.resumeFaulted();
      };
      if (resume === 'drop') {
        const r = resumeRecord(req, 'drill', 'dropped');
        r.ended = 'dropped';
        events.log(`resume  ${describe(r)} → dropped, unanswered`);
        req.socket.destroy();
        done();
        return;
      }
      if (resume === 'hold') {
        const r = resumeRecord(req, 'drill', 'held');
        events.log(`resume  ${describe(r)} → held open with no frames for ${options.holdMs / 1000} s`);
        hold(res, r);
        done();
        return;
      }
      const reroute = resume === 'reroute' && options.rerouteUpstream !== undefined;
      const r = resumeRecord(req, reroute ? 'reroute' : 'upstream', reroute ? 'rerouted' : 'passed');
      events.log(`resume  ${describe(r)} → ${reroute ? 'rerouted to --reroute-upstream' : 'passed to --upstream'}`);
      proxy(req, res, reroute ? options.rerouteUpstream! : options.upstream, r, false);
      done();
      return;
    }
    const kind: StreamKind = req.method === 'GET' ? (lastEventId !== undefined ? 'resume' : 'get') : 'post';
    const cuttable = kind !== 'resume' && (options.streams === 'all' || options.streams === kind);
    proxy(req, res, options.upstream, undefined, cuttable);
  });
  server.maxConnections = 512;
  server.on('connection', socket => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
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
    state,
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      await new Promise<void>(resolve => server.close(() => resolve()));
    },
  };
}
