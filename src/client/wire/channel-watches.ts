/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What the undici channel observer (undici-channels.ts) does with one MCP exchange: the same work as the fetch
 * wrapper's (session-get.ts, per-request-exchange.ts), fed from the channel's events instead of a Response. Loaded
 * on the first MCP exchange, as the wrapper's work is.
 */
import type { PerRequestClientObserver, PerRequestPost, PerRequestStreamWatch } from './per-request-exchange';
import type { ForkwatchRuntime } from '../../shared/runtime';
import { isObservedPost } from '../observer/patched-transport-scope';
import { SessionStreamWatch } from './channel-session-stream';
import type { SseGet } from './session-get-request';
import { sessionGetResponded, sessionGetSent, sessionGetUnanswered } from './session-get';

type Header = (name: string) => string | undefined;

/** A compressed body reaches the channel as it came off the wire: its frames cannot be read there. */
const compressed = (header: Header) => {
  const encoding = header('content-encoding');
  return encoding !== undefined && encoding.toLowerCase() !== 'identity';
};

/** `cut`: aborts the request (fail-loud mode's cut of a forked stream); undefined where undici gives no abort. */
export function sessionGetWatch(get: SseGet, runtime: ForkwatchRuntime, cut: ((error: unknown) => void) | undefined) {
  const attempt = sessionGetSent(get, runtime);
  let stream: SessionStreamWatch | undefined;
  return {
    responded(status: number | undefined, header: Header): boolean {
      if (!sessionGetResponded(status, String(header('content-type') ?? ''), true, attempt, runtime)) return false;
      if (compressed(header)) {
        attempt?.concludeInconclusive('unobservable');
        return false;
      }
      stream = new SessionStreamWatch(get, attempt, runtime, cut);
      return true;
    },
    push(chunk: Uint8Array) {
      stream?.push(chunk);
    },
    ended(error: unknown, aborted: boolean) {
      if (stream) stream.end(aborted);
      else sessionGetUnanswered(attempt, aborted, error);
    },
  };
}

export function perRequestPostWatch(endpoint: string, header: Header, runtime: ForkwatchRuntime, maxBodyBytes: number) {
  const exchange = require('./per-request-exchange') as typeof import('./per-request-exchange');
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  let overflowed = false;
  // Set when the app stops the request: a cut it asked for is not a loss (judgeStreamEnd).
  const signal = { aborted: false };
  let sent: { post: PerRequestPost; observer: PerRequestClientObserver } | undefined;
  let stream: PerRequestStreamWatch | undefined;
  return {
    sent(chunk: Uint8Array | string) {
      if (overflowed) return;
      const bytesOf = typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
      bytes += bytesOf.byteLength;
      if (bytes > maxBodyBytes) {
        overflowed = true;
        chunks.length = 0;
        return;
      }
      // Copied: the chunk is undici's, and may be reused once the subscriber returns.
      chunks.push(Uint8Array.prototype.slice.call(bytesOf));
    },
    bodySent() {
      if (overflowed || sent) return;
      const body = Buffer.concat(chunks).toString('utf8');
      chunks.length = 0;
      // Observed by a transport's own fetch or the fetch wrapper (Node 22), whose fetch this request is.
      if (isObservedPost(body)) return;
      const init = { method: 'POST', body, headers: { get: header } };
      const post = exchange.perRequestPostOf(endpoint, init as Parameters<typeof exchange.perRequestPostOf>[1]);
      if (!post) return;
      post.signal = signal;
      const observer = exchange.perRequestSent(post, runtime);
      if (observer) sent = { post, observer };
    },
    responded(status: number | undefined, responseHeader: Header): boolean {
      if (!sent) return false;
      const { post, observer } = sent;
      const contentType = String(responseHeader('content-type') ?? '');
      stream = exchange.exchangeResponded(status ?? 0, contentType, true, post, observer, runtime);
      if (stream && compressed(responseHeader)) {
        runtime.diag.debug('a compressed per-request SSE response: not observed on the undici channel');
        stream = undefined;
      }
      return stream !== undefined;
    },
    push(chunk: Uint8Array) {
      stream?.push(chunk);
    },
    ended(error: unknown, aborted: boolean) {
      if (aborted) signal.aborted = true;
      if (stream) stream.end(error === undefined ? 'eof' : aborted ? 'cancel' : 'error');
      else if (sent) exchange.perRequestUnanswered(sent.post, sent.observer, runtime);
    },
  };
}
