/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * In-process test support for the server instrumentation: a ForkwatchInstrumentation with an in-memory span
 * exporter and the real Prometheus serializer, SDK modules loaded from any app folder, and small helpers to drive a
 * real server transport (hydrated, as a multi-node deployment does) and read what it answered.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { type Forkwatch, setupForkwatch as setupSharedForkwatch } from '../support/forkwatch';
import type { ForkwatchInstrumentationConfig } from '../../src/shared/types';
// @ts-expect-error: plain ESM module without types
import { LabEventStore } from '../../lab/event-store.mjs';

export { LabEventStore };

export const root = join(__dirname, '../..');
export const versionsDir = join(root, 'test/sdk-versions');

/** `require` as an app in `folder` (default: the repository root) would use it. */
export function requireFrom(folder = root): NodeJS.Require {
  return createRequire(join(folder, 'resolve-from.js'));
}

export type { Forkwatch };

/** A ForkwatchInstrumentation on private providers, with the given modules instrumented by the manual API. */
export function setupForkwatch(config: ForkwatchInstrumentationConfig = {}, ...modules: object[]): Forkwatch {
  return setupSharedForkwatch(config, modules);
}

export const notification = (n: number) => ({
  jsonrpc: '2.0' as const,
  method: 'notifications/message',
  params: { level: 'info', data: { n } },
});

/** A session transport that claims session `sessionId` without an initialize (the lab's hydration). */
export function hydrate<T extends object>(transport: T, sessionId = 'session-1'): T {
  // The SDK's private session state, on the web-standard transport a Node transport wraps (or on the transport itself).
  type SessionState = { sessionId?: string; _initialized?: boolean };
  const core = ((transport as { _webStandardTransport?: SessionState })._webStandardTransport ??
    transport) as SessionState;
  core.sessionId = sessionId;
  core._initialized = true;
  return transport;
}

export function getRequest(headers: Record<string, string>, sessionId = 'session-1'): Request {
  return new Request('http://127.0.0.1/mcp', {
    method: 'GET',
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
      ...headers,
    },
  });
}

/**
 * SSE frames (id and data) of a body, then the body is cancelled. With `{ count }`: read until `count` frames arrived
 * (the way to read: it waits for what the test expects, however slow the machine); throws when the body ends or
 * `timeoutMs` passes first. With a number (kept for older tests): whatever arrives within that many ms.
 */
export async function readFrames(
  body: ReadableStream<Uint8Array> | null,
  until: number | { count: number; timeoutMs?: number } = 100,
): Promise<{ id?: string; data: string }[]> {
  if (!body) {
    if (typeof until === 'object' && until.count > 0) throw new Error(`no body; expected ${until.count} frames`);
    return [];
  }
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const ms = typeof until === 'number' ? until : (until.timeoutMs ?? 10_000);
  const enough = () => typeof until === 'object' && parseFrames(text).length >= until.count;
  const deadline = Date.now() + ms;
  let ended = false;
  while (!enough()) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    let timer: NodeJS.Timeout | undefined;
    const next = await Promise.race([
      reader.read(),
      new Promise<'timeout'>(r => (timer = setTimeout(() => r('timeout'), left))),
    ]);
    clearTimeout(timer);
    if (next === 'timeout') break;
    if (next.done) {
      ended = true;
      break;
    }
    text += decoder.decode(next.value, { stream: true });
  }
  await reader.cancel().catch(() => {});
  const frames = parseFrames(text);
  if (typeof until === 'object' && frames.length < until.count) {
    const why = ended ? 'the body ended' : `${ms} ms passed`;
    throw new Error(`${why} after ${frames.length} of ${until.count} frames: ${JSON.stringify(frames)}`);
  }
  return frames;
}

export function parseFrames(text: string): { id?: string; data: string }[] {
  const frames: { id?: string; data: string }[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter(l => l && !l.startsWith(':'));
    if (!lines.some(l => l.startsWith('data:'))) continue;
    const id = lines
      .find(l => l.startsWith('id:'))
      ?.slice(3)
      .trim();
    frames.push({
      ...(id !== undefined ? { id } : {}),
      data: lines
        .filter(l => l.startsWith('data:'))
        .map(l => l.slice(5).trim())
        .join('\n'),
    });
  }
  return frames;
}

/** Attributes of the span event `name` of a span. */
export function eventAttributes(span: ReadableSpan, name: string): Record<string, unknown> {
  const event = span.events.find(e => e.name === name);
  if (!event) throw new Error(`span ${span.name} has no event ${name}`);
  return event.attributes ?? {};
}
