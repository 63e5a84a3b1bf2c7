/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Shared support of the hardening tests: forkwatch on private OpenTelemetry providers, a real SDK client that records
 * everything the application sees, lab server processes that the tests may kill, and checks that recorded data is
 * bounded and printable.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createParser } from 'eventsource-parser';
import * as streamableHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DiagLogLevel, diag } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { type Forkwatch, setupForkwatch as setupSharedForkwatch } from '../support/forkwatch';
import type { ForkwatchInstrumentationConfig } from '../../src/shared/types';

export const root = join(__dirname, '../..');
export const { StreamableHTTPClientTransport } = streamableHttp;
export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/** Polls `fn` until it returns something truthy; the deadline is on the monotonic clock (tests move Date). */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 8000,
): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Everything forkwatch's diagnostics said at warn level and above, for the whole test file. */
export const diagnostics: string[] = [];
diag.setLogger(
  {
    error: (...args: unknown[]) => diagnostics.push(`error: ${args.map(String).join(' ')}`),
    warn: (...args: unknown[]) => diagnostics.push(`warn: ${args.map(String).join(' ')}`),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  },
  DiagLogLevel.WARN,
);

export type { Forkwatch };

/** ForkwatchInstrumentation on private providers, patching the given SDK modules (default: the 1.x client). */
export function setupForkwatch(config: ForkwatchInstrumentationConfig = {}, ...modules: object[]): Forkwatch {
  return setupSharedForkwatch(config, modules.length > 0 ? modules : [streamableHttp]);
}

/** What the application sees of a session: every notification (as JSON), every onerror message, in order. */
export interface App {
  client: Client;
  transport: InstanceType<typeof StreamableHTTPClientTransport>;
  notifications: string[];
  errors: string[];
  /** Values of `params.data.seq`/`params.data.n` of the logging notifications received, in order. */
  seqs: number[];
  close(): Promise<void>;
}

export interface ConnectOptions {
  reconnect?: {
    initialReconnectionDelay: number;
    maxReconnectionDelay: number;
    reconnectionDelayGrowFactor: number;
    maxRetries: number;
  };
}

export async function connectApp(url: string, options: ConnectOptions = {}): Promise<App> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    reconnectionOptions: options.reconnect ?? {
      initialReconnectionDelay: 20,
      maxReconnectionDelay: 40,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    },
  });
  const client = new Client({ name: 'forkwatch-hardening', version: '1.0.0' });
  const app: App = {
    client,
    transport,
    notifications: [],
    errors: [],
    seqs: [],
    async close() {
      await transport.close().catch(() => {});
      await client.close().catch(() => {});
    },
  };
  client.fallbackNotificationHandler = async notification => {
    app.notifications.push(JSON.stringify(notification));
    const data = (notification.params as { data?: { seq?: unknown; n?: unknown } } | undefined)?.data;
    const seq = data?.seq ?? data?.n;
    if (typeof seq === 'number') app.seqs.push(seq);
  };
  client.onerror = error => app.errors.push(String(error?.message ?? error));
  await client.connect(transport);
  return app;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Bounded and printable: no control characters (C0, DEL, C1; `allow` lists exceptions), no lone surrogates, at most
 * `max` UTF-16 units. Returns a description of the first problem, or undefined.
 */
export function unprintable(value: unknown, max = 400, allow = ''): string | undefined {
  if (typeof value !== 'string') return undefined;
  if (value.length > max) return `${value.length} characters`;
  for (const ch of value) {
    const c = ch.codePointAt(0)!;
    if ((c < 0x20 || (c >= 0x7f && c <= 0x9f)) && !allow.includes(ch)) {
      return `control character U+${c.toString(16).padStart(4, '0')} in ${JSON.stringify(value.slice(0, 80))}`;
    }
  }
  if (LONE_SURROGATE.test(value)) return `lone surrogate in ${JSON.stringify(value.slice(0, 80))}`;
  return undefined;
}

/**
 * Fails on the first attribute that is unbounded or unprintable. forkwatch's own attributes (ids, reasons, session
 * hashes) must fit `max`; `exception.*` (recordException of an error from the SDK or fetch) may hold a multi-line
 * stack trace, which Error.stackTraceLimit bounds.
 */
export function expectPrintableSpans(spans: ReadableSpan[], max = 400): void {
  for (const span of spans) {
    const entries = [
      ...Object.entries(span.attributes),
      ...span.events.flatMap(e => Object.entries(e.attributes ?? {})),
    ];
    for (const [key, value] of entries) {
      const problem = key.startsWith('exception.') ? unprintable(value, 8192, '\n') : unprintable(value, max);
      if (problem) throw new Error(`span ${span.name}: ${key} has ${problem}`);
    }
  }
}

/** Verdicts of the client resume spans, as `outcome` or `outcome:reason` (fork reasons, and why inconclusive). */
export function clientOutcomes(fw: Forkwatch): string[] {
  return fw.spans('forkwatch.client.resume').map(s => {
    const outcome = String(s.attributes['forkwatch.resume.outcome']);
    const event = s.events.find(e => e.name === 'forkwatch.resume.first_frame')?.attributes ?? {};
    const reason = s.attributes['forkwatch.resume.reason'] ?? event['forkwatch.resume.reason'];
    return reason === undefined ? outcome : `${outcome}:${reason}`;
  });
}

export interface LabServer {
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * A fork-lab MCP server process (lab/mcp-server.cjs: the real SDK, configured by LAB_SERVER), started here rather than
 * through lab/harness.mjs so that a test can SIGKILL it.
 */
export async function startLabServer(config: Record<string, unknown>): Promise<LabServer> {
  const child = spawn(process.execPath, [join(root, 'lab/mcp-server.cjs')], {
    env: { ...process.env, LAB_SERVER: JSON.stringify({ telemetry: false, ...config }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`lab server did not start: ${err}`)), 20_000);
    child.stderr!.on('data', chunk => (err += chunk));
    child.stdout!.on('data', chunk => {
      out += chunk;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    void exited.then(code => reject(new Error(`lab server exited with ${code}: ${err}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    exited,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

/** Bytes a replay server sends on the first GET of a session, in these chunks (a pause between them). */
export interface ReplayCase {
  chunks: Uint8Array[];
}

export interface ReplayServer {
  url: string;
  serve(c: ReplayCase): void;
  /** Headers of the GETs since the case was served. */
  gets(): IncomingMessage['headers'][];
  close(): Promise<void>;
}

/**
 * A server that answers the MCP handshake (session `sessionId`, protocol 2025-11-25), serves the current case on the
 * first GET and answers 405 (no SSE) to any later GET, so a client reconnects at most once and then stops.
 */
export async function startReplayServer(sessionId: string): Promise<ReplayServer> {
  let current: ReplayCase | undefined;
  let gets: IncomingMessage['headers'][] = [];
  const open = new Set<ServerResponse>();
  const server = createServer(async (req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    if (req.method === 'GET') {
      gets.push(req.headers);
      if (gets.length > 1 || !current) {
        res.writeHead(405).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const chunk of current.chunks) {
        res.write(chunk);
        await new Promise(resolve => setImmediate(resolve));
      }
      res.end();
      return;
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    let message: { method?: string; id?: unknown } = {};
    try {
      message = body ? JSON.parse(body) : {};
    } catch {
      // a client response to a server request the case made up: accepted like any other
    }
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': sessionId });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: message.id,
          result: {
            protocolVersion: '2025-11-25',
            capabilities: { logging: {} },
            serverInfo: { name: 'replay', version: '1.0.0' },
          },
        }),
      );
      return;
    }
    res.writeHead(req.method === 'DELETE' ? 200 : 202).end();
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    serve(c) {
      current = c;
      gets = [];
    },
    gets: () => gets,
    async close() {
      for (const res of open) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise(resolve => server.close(resolve));
    },
  };
}

/** What the application saw of one replayed case, and the Last-Event-ID the SDK reconnected with. */
export interface Seen {
  notifications: string[];
  errors: string[];
  resumeCursor: string | undefined;
}

/** The frame a case ends with: a blank line first, so it is a frame of its own whatever came before. */
export const SENTINEL_FRAME = `\n\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'sentinel' } })}\n\n`;

/** Plays a case (which must end with SENTINEL_FRAME) through a real SDK client and returns what the app saw. */
export async function playCase(server: ReplayServer, c: ReplayCase): Promise<Seen> {
  server.serve(c);
  const app = await connectApp(server.url, {
    reconnect: { initialReconnectionDelay: 1, maxReconnectionDelay: 1, reconnectionDelayGrowFactor: 1, maxRetries: 1 },
  });
  try {
    await waitFor('the sentinel frame', () => app.notifications.some(n => n.includes('"sentinel"')));
    // After the stream ends the SDK reconnects once: either the GET reaches the server (405), or the id is no valid
    // header value and the SDK gives up.
    await waitFor(
      'the reconnect',
      () => server.gets().length >= 2 || app.errors.some(e => e.includes('Maximum reconnection attempts')),
    );
    await sleep(10);
    const cursor = server.gets()[1]?.['last-event-id'];
    return {
      notifications: [...app.notifications],
      errors: [...app.errors],
      resumeCursor: typeof cursor === 'string' ? cursor : undefined,
    };
  } finally {
    await app.close();
  }
}

/** Plays a case without forkwatch (unpatched), then with it, its ledger cleared first. */
export async function playBothWays(
  server: ReplayServer,
  fw: Forkwatch,
  c: ReplayCase,
): Promise<{ bare: Seen; patched: Seen }> {
  fw.instrumentation.disable();
  const bare = await playCase(server, c);
  fw.instrumentation.enable();
  fw.instrumentation.manuallyInstrument(streamableHttp);
  fw.instrumentation.clientLedger.clear();
  const patched = await playCase(server, c);
  return { bare, patched };
}

/** What eventsource-parser, fed the way the SDK feeds it (a streaming UTF-8 TextDecoder), reads as the last id. */
export function referenceLastId(chunks: Uint8Array[]): string | undefined {
  let last: string | undefined;
  const parser = createParser({
    onEvent: e => {
      if (e.id) last = e.id;
    },
  });
  const decoder = new TextDecoder();
  for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
  parser.feed(decoder.decode());
  return last;
}

export interface InProcessMcpOptions {
  /** Frames per SSE stream: the first GET and every resume. */
  framesPerStream: number;
  /** Resumes per session before the server answers 405 and the client stops reconnecting. */
  resumesPerSession: number;
}

/**
 * An MCP server behind a `fetch` function, for the SDK client's `fetch` option: the real client transport, its real
 * SSE pipeline and forkwatch's real patch, without sockets, so thousands of sessions run in seconds. Each session's
 * GET stream carries SDK-format ids of one stream, ends after `framesPerStream` frames, and every resume continues
 * right after the cursor (a correct event store): every resume is healthy.
 */
export function inProcessMcp({ framesPerStream, resumesPerSession }: InProcessMcpOptions) {
  let sessionCounter = 0;
  const sessions = new Map<string, { next: number; gets: number; done: () => void; finished: Promise<void> }>();
  const stats = { sessions: 0, gets: 0, resumes: 0, frames: 0, wrongCursors: 0 };
  const encoder = new TextEncoder();
  const idOf = (sid: string, n: number) =>
    `${sid}_${1_760_000_000_000 + n}_${(n * 7919).toString(36).padStart(4, '0')}`;

  const fetchFn = async (_input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    const method = init.method ?? 'GET';
    if (method === 'POST') {
      // The session starts with the client's `initialized` notification (runSession skips the initialize round
      // trip, whose cost is the Client's, not the transport's): 202 with a new session id, and the SDK opens its GET.
      const sid = `load-${++sessionCounter}`;
      let done!: () => void;
      const finished = new Promise<void>(resolve => (done = resolve));
      sessions.set(sid, { next: 1, gets: 0, done, finished });
      stats.sessions++;
      return new Response(null, { status: 202, headers: { 'mcp-session-id': sid } });
    }
    const sid = headers.get('mcp-session-id') ?? '';
    const session = sessions.get(sid);
    if (method === 'DELETE' || !session) {
      sessions.delete(sid);
      return new Response(null, { status: session ? 200 : 404 });
    }
    session.gets++;
    stats.gets++;
    const cursor = headers.get('last-event-id');
    if (cursor !== null) {
      stats.resumes++;
      if (cursor !== idOf(sid, session.next - 1)) stats.wrongCursors++;
    }
    if (session.gets > resumesPerSession + 1) {
      session.done();
      return new Response(null, { status: 405 });
    }
    let text = '';
    for (let i = 0; i < framesPerStream; i++) {
      const n = session.next++;
      text += `id: ${idOf(sid, n)}\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"seq":${n}}}}\n\n`;
    }
    stats.frames += framesPerStream;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(text));
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  };

  return {
    fetch: fetchFn,
    stats,
    /**
     * Runs one session through a real SDK client transport: its `initialized` notification opens the GET stream, which
     * ends and is resumed until the server answers 405; then the transport is closed.
     */
    async runSession(): Promise<{ seqs: number[]; errors: string[] }> {
      const transport = new StreamableHTTPClientTransport(new URL('http://in-process.invalid/mcp'), {
        fetch: fetchFn,
        reconnectionOptions: {
          initialReconnectionDelay: 0,
          maxReconnectionDelay: 0,
          reconnectionDelayGrowFactor: 1,
          maxRetries: 1,
        },
      });
      const seqs: number[] = [];
      const errors: string[] = [];
      transport.onmessage = message => {
        const seq = (message as { params?: { data?: { seq?: unknown } } }).params?.data?.seq;
        if (typeof seq === 'number') seqs.push(seq);
      };
      transport.onerror = error => errors.push(String(error?.message ?? error));
      await transport.start();
      transport.setProtocolVersion('2025-11-25');
      await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const sid = transport.sessionId!;
      await sessions.get(sid)!.finished;
      await transport.close();
      sessions.delete(sid);
      return { seqs, errors };
    },
  };
}

/** Runs `total` sessions, `concurrency` at a time; `each` sees every session's result. */
export async function runSessions<T>(
  total: number,
  concurrency: number,
  run: () => Promise<T>,
  each: (result: T) => void,
): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      each(await run());
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}
