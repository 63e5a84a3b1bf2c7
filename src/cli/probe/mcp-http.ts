/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Just enough of the streamable-HTTP client side of MCP to probe resumption: raw `fetch`, one new connection per
 * request (`Connection: close`) so that a load balancer can send each request to a different replica, and a
 * bound on every exchange.
 */
import { PROBE_USER_AGENT } from '../../shared/names';
import { PACKAGE_VERSION } from '../../shared/version';
import { Budget } from './budget';
import { quoted } from './server-text';
import { type SseFrame, SseReader } from './sse-reader';

/** How the probe names itself on every request, so servers (and forkwatch's own server side) can count it apart. */
export const USER_AGENT = `${PROBE_USER_AGENT}/${PACKAGE_VERSION}`;

export interface StepRecord {
  step: string;
  method: string;
  /** HTTP status; null when no response arrived. */
  status: number | null;
  ms: number;
  error?: string;
}

export interface Exchange {
  /** 0 when no response arrived (see `error`). */
  status: number;
  /** Media type without parameters, lower case ('' when absent). */
  mediaType: string;
  headers: Headers | undefined;
  error?: string;
  ms: number;
  response?: Response;
  /** Ends the exchange and its connection, whatever state it is in. */
  close(): Promise<void>;
}

export type JsonRpcMessage = Record<string, unknown>;

export interface ReadResult {
  /** The response to the request, when it arrived. */
  message?: JsonRpcMessage;
  /** SSE frames seen, the response's included; empty for JSON bodies. */
  frames: SseFrame[];
  /** Why no response was read. */
  error?: string;
}

/** Bodies larger than this are not read: the probe only exchanges small messages. */
const MAX_BODY_CHARS = 1 << 20;
/** The session's DELETE, sent even after the stop, waits at most this long: its answer changes nothing. */
export const FINAL_STEP_MS = 2000;

export interface HttpLimits {
  /** Stops the run from outside (the exporter's abandoned scrape). */
  stop?: AbortSignal;
  /** The run's time (ms; default none): every exchange in flight is cut then, and no step waits beyond it. */
  runMs?: number;
  /** How long the session's DELETE, sent after the run, may wait (default FINAL_STEP_MS). */
  finalMs?: number;
}

export class McpHttp {
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  readonly steps: StepRecord[] = [];
  /** The run's deadline and the waits derived from it (budget.ts). */
  readonly budget: Budget;
  private readonly finalMs: number;

  constructor(
    private readonly url: URL,
    private readonly extraHeaders: Readonly<Record<string, string>>,
    readonly timeoutMs: number,
    limits: HttpLimits = {},
  ) {
    this.budget = new Budget(timeoutMs, limits.runMs ?? Number.POSITIVE_INFINITY, limits.stop);
    this.finalMs = Math.min(timeoutMs, limits.finalMs ?? FINAL_STEP_MS);
  }

  /** True once the run reached its deadline (or was stopped): every exchange since is cut. */
  get stopped(): boolean {
    return this.budget.stopped;
  }

  /** The end of a step's wait started now: --timeout, or the run's deadline if it comes first. */
  deadline(): number {
    return this.budget.stepDeadline();
  }

  /** The end of the wait, started now, for a frame the server owes at once (budget.ts). */
  frameDeadline(): number {
    return this.budget.owedFrameDeadline();
  }

  /** Sends one request and waits (bounded) for its status line and headers; the body is left to the caller. */
  async send(
    step: string,
    method: 'POST' | 'GET' | 'DELETE',
    options: { message?: JsonRpcMessage; lastEventId?: string; evenWhenStopped?: boolean } = {},
  ): Promise<Exchange> {
    const headers: Record<string, string> = {
      'user-agent': USER_AGENT,
      accept: method === 'GET' ? 'text/event-stream' : 'application/json, text/event-stream',
      connection: 'close',
      ...this.extraHeaders,
    };
    if (options.message !== undefined) headers['content-type'] = 'application/json';
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId;
    if (this.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.protocolVersion;
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;

    const controller = new AbortController();
    const started = Date.now();
    const waitMs = options.evenWhenStopped ? this.finalMs : this.timeoutMs;
    const timer = setTimeout(() => controller.abort(), waitMs);
    const stop = options.evenWhenStopped ? undefined : this.budget.signal;
    const onStop = () => controller.abort();
    if (stop?.aborted) controller.abort();
    else stop?.addEventListener('abort', onStop, { once: true });
    const close = async (response?: Response) => {
      clearTimeout(timer);
      stop?.removeEventListener('abort', onStop);
      if (response?.body && !response.bodyUsed) await response.body.cancel().catch(() => undefined);
      controller.abort();
    };
    try {
      const response = await fetch(this.url, {
        method,
        headers,
        signal: controller.signal,
        // Redirects are reported, not followed: a redirect would carry the credentials elsewhere.
        redirect: 'manual',
        ...(options.message !== undefined ? { body: JSON.stringify(options.message) } : {}),
      });
      clearTimeout(timer);
      const exchange: Exchange = {
        status: response.status,
        mediaType: (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase(),
        headers: response.headers,
        ms: Date.now() - started,
        response,
        close: () => close(response),
      };
      this.steps.push({ step, method, status: response.status, ms: exchange.ms });
      this.budget.answered(exchange.ms);
      return exchange;
    } catch (error) {
      const message = stop?.aborted
        ? 'the probe reached its deadline'
        : controller.signal.aborted
          ? `no response within ${waitMs} ms`
          : describeError(error);
      await close();
      const ms = Date.now() - started;
      this.steps.push({ step, method, status: null, ms, error: message });
      return { status: 0, mediaType: '', headers: undefined, error: message, ms, close: () => close() };
    }
  }

  /** Reads the response to request `id` from a JSON or SSE body, within `deadline`. Closes the exchange. */
  async readResponse(exchange: Exchange, id: string | number | undefined, deadline: number): Promise<ReadResult> {
    try {
      const response = exchange.response;
      if (response?.body == null) return { frames: [], error: exchange.error ?? 'empty body' };
      if (exchange.mediaType === 'text/event-stream') return await readSseResponse(response.body, id, deadline);
      const body = await readText(response, deadline);
      if (body.failure === 'timeout') return { frames: [], error: `body not complete within ${this.timeoutMs} ms` };
      if (body.failure !== undefined)
        return { frames: [], error: `a body over ${MAX_BODY_CHARS} characters (the probe reads no more of it)` };
      const text = body.text;
      const message = findResponse(parseJson(text), id);
      return message ? { message, frames: [] } : { frames: [], error: `no JSON-RPC response in: ${quoted(text, 200)}` };
    } finally {
      await exchange.close();
    }
  }
}

async function readSseResponse(
  body: ReadableStream<Uint8Array>,
  id: string | number | undefined,
  deadline: number,
): Promise<ReadResult> {
  const reader = new SseReader(body);
  const frames: SseFrame[] = [];
  try {
    for (;;) {
      const read = await reader.next(deadline);
      if (read.kind !== 'frame') {
        return { frames, error: read.kind === 'error' ? read.error : read.kind === 'eof' ? 'stream ended' : 'timeout' };
      }
      frames.push(read.frame);
      const message = findResponse(parseJson(read.frame.data), id);
      if (message) return { message, frames };
    }
  } finally {
    await reader.cancel();
  }
}

/** The body as text; past MAX_BODY_CHARS the read stops (never cut silently: a cut body is not what was sent). */
async function readText(
  response: Response,
  deadline: number,
): Promise<{ text: string; failure?: undefined } | { failure: 'timeout' | 'oversized' }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>(
    resolve => (timer = setTimeout(() => resolve('timeout'), deadline - Date.now())),
  );
  try {
    for (;;) {
      const read = await Promise.race([reader.read(), timeout]);
      if (read === 'timeout') return { failure: 'timeout' };
      if (read.done) return { text: text + decoder.decode() };
      text += decoder.decode(read.value, { stream: true });
      if (text.length > MAX_BODY_CHARS) return { failure: 'oversized' };
    }
  } catch {
    return text === '' ? { failure: 'timeout' } : { text };
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
}

/** A redirect, never followed (credentials would go elsewhere), with where it pointed. */
export function redirected(exchange: Exchange): string {
  const location = exchange.headers?.get('location');
  return `answered ${exchange.status}${location ? ` to ${quoted(location)}` : ''}: redirects are not followed (credentials would go elsewhere); probe the final URL`;
}

/** The answer's content type as the server sent it, quoted. */
export function shownType(exchange: Exchange): string {
  return exchange.mediaType === '' ? 'no content type' : quoted(exchange.mediaType, 80);
}

/** `: "<JSON-RPC error message>"` (quoted: the server chose it) from an error body, or '': read within a short bound. */
export async function errorMessage(http: McpHttp, exchange: Exchange): Promise<string> {
  const read = await http.readResponse(exchange, undefined, Math.min(http.deadline(), Date.now() + 1000));
  const error = read.message?.error as { message?: unknown } | undefined;
  return typeof error?.message === 'string' ? `: ${quoted(error.message)}` : '';
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The JSON-RPC response (result or error) to request `id` in a message or a batch; any response if id is undefined. */
export function findResponse(value: unknown, id: string | number | undefined): JsonRpcMessage | undefined {
  const candidates = Array.isArray(value) ? value : [value];
  for (const candidate of candidates) {
    if (!isResponse(candidate)) continue;
    if (id === undefined || candidate.id === id) return candidate;
  }
  return undefined;
}

export function isResponse(value: unknown): value is JsonRpcMessage {
  return typeof value === 'object' && value !== null && 'id' in value && ('result' in value || 'error' in value);
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // undici puts the useful part (ECONNREFUSED, ...) in the cause.
  const cause = (error as Error & { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
}
