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

export class McpHttp {
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  readonly steps: StepRecord[] = [];

  constructor(
    private readonly url: URL,
    private readonly extraHeaders: Readonly<Record<string, string>>,
    readonly timeoutMs: number,
    /** Aborts every exchange in flight and every later one but the session's DELETE (the exporter's deadline). */
    private readonly stop?: AbortSignal,
  ) {}

  get stopped(): boolean {
    return this.stop?.aborted === true;
  }

  deadline(): number {
    return Date.now() + this.timeoutMs;
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
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const stop = options.evenWhenStopped ? undefined : this.stop;
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
      return exchange;
    } catch (error) {
      const message = stop?.aborted
        ? 'the probe reached its deadline'
        : controller.signal.aborted
          ? `no response within ${this.timeoutMs} ms`
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
      return message
        ? { message, frames: [] }
        : { frames: [], error: `no JSON-RPC response in: ${text.slice(0, 200)}` };
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
