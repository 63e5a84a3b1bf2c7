/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Responses a client receives that answer no request of its own: a request it never sent, or one it already got an
 * answer to. They come from another stream's log (a replay after event ids collided across replicas) or another
 * session's, and the SDK only reports them as "Received a response for an unknown message ID". Counted in
 * `forkwatch_client_foreign_responses_total`, beside the duplicate frames.
 *
 * The transport's `send` notes each request id (once per request, not per frame); the transport's `onmessage`, set by
 * the SDK's Protocol before the first send, is observed through a pass-through function put in its place on the
 * first send (and again if the application replaces it), so responses on every stream and in JSON bodies are seen.
 * The message is only read.
 */
import { OutstandingRequests, isJsonRpcResponse } from '../../core/replay-boundary';
import type { ForkwatchRuntime } from '../../shared/runtime';

interface MessageReceiver {
  onmessage?: unknown;
}

const TRANSPORT_ATTRS = { transport: 'streamable_http' } as const;

/**
 * What this file keeps of one transport, in the transport's own state (streamable-http-client.ts): not in weak maps
 * of its own, whose entries every garbage collection would trace (an ephemeron per session, issue 50).
 */
export interface AnsweredBook {
  /** The transport's requests sent and answered; made at its first request. */
  book: OutstandingRequests | undefined;
  /** The pass-through function forkwatch last put in the transport's `onmessage`. */
  observedHandler: unknown;
}

function isRequest(message: unknown): message is { id: unknown } {
  return message !== null && typeof message === 'object' && 'method' in message && 'id' in message;
}

/** The transport is sending `message` (its `send`); `kept` is the transport's state. Never throws. */
export function noteSentMessage(
  transport: MessageReceiver,
  kept: AnsweredBook,
  message: unknown,
  runtime: ForkwatchRuntime,
): void {
  try {
    if (!isRequest(message)) return;
    kept.book ??= new OutstandingRequests();
    kept.book.sent(message.id);
    observeMessages(transport, kept, kept.book, runtime);
  } catch (error) {
    runtime.diag.error('noting a sent request failed', error);
  }
}

/** True when the request `id` was answered on the transport whose state is `kept` (a result or an error came back). */
export function wasAnswered(kept: AnsweredBook | undefined, id: unknown): boolean {
  return id !== undefined && kept?.book?.wasAnswered(id) === true;
}

function observeMessages(
  transport: MessageReceiver,
  kept: AnsweredBook,
  book: OutstandingRequests,
  runtime: ForkwatchRuntime,
): void {
  const handler = transport.onmessage;
  if (typeof handler !== 'function' || handler === kept.observedHandler) return;
  // `arguments`, not a rest array: this runs for every message the client receives.
  const observed = function onmessage(this: unknown, message: unknown) {
    if (runtime.enabled) {
      try {
        if (isJsonRpcResponse(message) && book.answered((message as { id: unknown }).id)) {
          runtime.instruments.clientForeignResponses.add(1, TRANSPORT_ATTRS);
        }
      } catch (error) {
        runtime.diag.error('checking a received response failed', error);
      }
    }
    // biome-ignore lint/complexity/noArguments: forwards whatever the SDK passes, without allocating
    return handler.apply(this, arguments);
  };
  kept.observedHandler = observed;
  transport.onmessage = observed;
}
