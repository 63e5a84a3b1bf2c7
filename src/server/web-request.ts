/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reading the request a stack's transport answers, the same way in every stack: a web Request's headers, the client
 * going away (its signal), and the trace context a resume's span continues. The SDK's Node class of 1.24 and earlier
 * takes an IncomingMessage instead (stacks/sdk/flavors.ts).
 */
import { type Context, type TextMapGetter, context, propagation, trace } from '@opentelemetry/api';
import type { HttpRequestLike, WebHeadersLike, WebRequestLike } from '../shared/internal-types';

/** A header of a web Request: undefined when absent or empty. */
export function webHeader(req: WebRequestLike | undefined, name: string): string | undefined {
  const value = req?.headers?.get?.(name);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export const webHeadersGetter: TextMapGetter<unknown> = {
  get: (carrier: WebHeadersLike | undefined, key) => carrier?.get?.(key) ?? undefined,
  keys: (carrier: WebHeadersLike | undefined) => (typeof carrier?.keys === 'function' ? [...carrier.keys()] : []),
};

/**
 * A watch on the client closing the connection before the response ended, listened to only once `armed`: the
 * request's signal is read now (@hono/node-server 1.19 aborts on close only a signal that exists by then) and a
 * listener added at `arm()`, or `dropped` called then if the client is gone already. A listener on an AbortSignal is
 * the costliest thing forkwatch did in a short session (issue 50), and most GET connections never carry an event
 * whose delivery the drop could put in doubt: their observer arms the watch at the first such event.
 */
export function webClientDropWatch(req: WebRequestLike | undefined, dropped: () => void): () => void {
  const signal = req?.signal;
  const listen = signal?.addEventListener;
  if (!signal || signal.aborted || typeof listen !== 'function') return noArm;
  let armed = false;
  return () => {
    if (armed) return;
    armed = true;
    if (signal.aborted) dropped();
    else listen.call(signal, 'abort', dropped, { once: true });
  };
}

const noArm = () => {};

/**
 * Calls `dropped` once if the client closes the connection before the response ended: the watch above, armed at once.
 * The Node adapter (@hono/node-server) aborts the request's signal when the connection closes before the response
 * finished; Deno, Bun and workers abort it on a client disconnect as well.
 */
export function onWebClientDrop(req: WebRequestLike | undefined, dropped: () => void): void {
  webClientDropWatch(req, dropped)();
}

/**
 * The parent of a server resume's span: the HTTP server span when an HTTP instrumentation made one; otherwise the
 * trace context the client sent on the resume GET (forkwatch's client patch injects it), so both sides share one trace.
 */
export function parentContextOf(req: HttpRequestLike | undefined, getter: TextMapGetter<unknown>): Context {
  const active = context.active();
  if (trace.getSpan(active)) return active;
  const headers = req?.headers;
  return headers ? propagation.extract(active, headers, getter) : active;
}
