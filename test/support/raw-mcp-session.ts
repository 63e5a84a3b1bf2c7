/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A streamable HTTP MCP client session in raw fetch calls, for server tests against real servers in child processes:
 * initialize, call a tool, open the standalone GET stream (optionally with Last-Event-ID) and read its frames.
 */
import { parseFrames } from '../server/support';

export interface RawFrame {
  id?: string;
  data: string;
}

/** A JSON-RPC message as it arrived on a stream (a notification's `params.data` is what the test server sent). */
export interface RawMessage {
  jsonrpc?: string;
  id?: string | number;
  method?: string;
  params?: { data?: Record<string, unknown> } & Record<string, unknown>;
  result?: unknown;
  error?: unknown;
}

export interface OpenStream {
  status: number;
  frames: RawFrame[];
  /** Frames that carry a JSON-RPC message (not priming frames or comments). */
  messages(): { id?: string; message: RawMessage }[];
  waitForMessages(count: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

const PROTOCOL = '2025-11-25';

export class RawMcpSession {
  sessionId: string | undefined;
  private nextId = 1;

  constructor(private readonly url: string) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      'mcp-protocol-version': PROTOCOL,
      ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}),
      ...extra,
    };
  }

  private async post(body: object): Promise<Response> {
    return fetch(this.url, {
      method: 'POST',
      headers: this.headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
      body: JSON.stringify(body),
    });
  }

  /** Sends a request and returns its result (from a JSON body or the SSE stream of the response). */
  async request(method: string, params: object = {}): Promise<unknown> {
    const id = this.nextId++;
    const res = await this.post({ jsonrpc: '2.0', id, method, params });
    if (!res.ok) throw new Error(`${method}: HTTP ${res.status} ${await res.text()}`);
    this.sessionId ??= res.headers.get('mcp-session-id') ?? undefined;
    const text = await res.text();
    const bodies = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? parseFrames(text).map(f => f.data)
      : [text];
    for (const body of bodies) {
      const message = body ? JSON.parse(body) : undefined;
      if (message?.id === id) {
        if (message.error) throw new Error(`${method}: ${JSON.stringify(message.error)}`);
        return message.result;
      }
    }
    throw new Error(`${method}: no response in ${JSON.stringify(text)}`);
  }

  async initialize(): Promise<void> {
    await this.request('initialize', {
      protocolVersion: PROTOCOL,
      capabilities: {},
      clientInfo: { name: 'stack-test', version: '1' },
    });
    const res = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await res.arrayBuffer();
  }

  callTool(name: string, args: object): Promise<unknown> {
    return this.request('tools/call', { name, arguments: args });
  }

  /** Opens the standalone GET stream (a resume when `lastEventId` is given) and reads it in the background. */
  async openGet(lastEventId?: string): Promise<OpenStream> {
    const abort = new AbortController();
    const res = await fetch(this.url, {
      method: 'GET',
      headers: this.headers({ accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) }),
      signal: abort.signal,
    });
    const frames: RawFrame[] = [];
    const waiters = new Set<() => void>();
    const wake = () => {
      for (const w of waiters) w();
    };
    if (res.ok && res.body) void readInto(res.body, frames, wake);
    else await res.arrayBuffer().catch(() => {});
    const messages = () =>
      frames
        .filter(f => f.data.startsWith('{'))
        .map(f => ({ ...(f.id ? { id: f.id } : {}), message: JSON.parse(f.data) as RawMessage }));
    return {
      status: res.status,
      frames,
      messages,
      waitForMessages: (count, timeoutMs = 15_000) =>
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (messages().length < count) return;
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            reject(new Error(`timed out waiting for ${count} messages; got ${JSON.stringify(frames)}`));
          }, timeoutMs);
          waiters.add(check);
          check();
        }),
      close: () => abort.abort(),
    };
  }
}

async function readInto(body: ReadableStream<Uint8Array>, frames: RawFrame[], onFrame: () => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const [frame] = parseFrames(`${block}\n\n`);
        if (frame) {
          frames.push(frame);
          onFrame();
        }
      }
    }
  } catch {
    // aborted by the test, or the server closed the stream
  }
}
