/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Client side of protocol 2026-07-28, on the wire: every MCP POST sent through `globalThis.fetch` with an
 * `MCP-Protocol-Version` of 2026-07-28 or later (the 2.x client with its default fetch, @ai-sdk/mcp, raw fetch).
 *
 * A response stream that ends or breaks before its terminal response loses the request; the spec says the client
 * MUST re-issue it as a new request, and no SDK does that for the app. This observer counts how each exchange
 * ended, whether the app re-issued a lost one (same endpoint, method, name and argument digest; MRTR retries
 * excluded) and how long that took, and for `subscriptions/listen` streams the gap from a drop to the next
 * acknowledgement. The response body is observed through a lazy own `body` getter on the very Response the caller
 * gets (as fetch-wrapper.ts does): no byte, header or status changes, and a body never read is never read.
 */
import { clearTimeout, setTimeout } from 'node:timers';
import type { Attributes } from '@opentelemetry/api';
import {
  type ClientExchangeOutcome,
  ListenGaps,
  SseDataScanner,
  type StreamEnd,
  classifyFrameData,
  judgeListenEnd,
  judgeStreamEnd,
  needsReissue,
} from '../../core/per-request-client';
import { ReissueWindow, digestJson, isMrtrRetry, reissueKey, requestTarget } from '../../core/per-request';
import type { FetchLike, RequestInitLike, WebResponseLike } from '../../shared/internal-types';
import { CLIENT_EXCHANGE_OUTCOMES, CLIENT_REISSUE_OUTCOMES, LISTEN_STREAM_OUTCOMES } from '../../shared/names';
import { type ForkwatchRuntime, nowMs } from '../../shared/runtime';
import { isBytes, lazyReader, observeResponseBody, passThroughStream, skipsChunk } from '../../shared/response-body';

/** One per-request POST, read from its URL, headers and string body. */
export interface PerRequestPost {
  key: string;
  listenKey: string | undefined;
  mrtr: boolean;
  signal: { aborted?: boolean } | undefined;
}

const EXCHANGE = attrs('outcome', CLIENT_EXCHANGE_OUTCOMES);
const REISSUE = attrs('outcome', CLIENT_REISSUE_OUTCOMES);
const LISTEN = attrs('outcome', LISTEN_STREAM_OUTCOMES);
function attrs<T extends readonly string[]>(key: string, values: T): Record<T[number], Attributes> {
  return Object.fromEntries(values.map(v => [v, Object.freeze({ [key]: v })])) as Record<T[number], Attributes>;
}

/**
 * The per-request POST this fetch call sends, or undefined for anything else. Never throws. Only for a call that
 * `perRequestVersionOf` accepted (a POST with a string body): the fetch observer checks that on every fetch, before
 * this module is even loaded.
 */
export function perRequestPostOf(input: unknown, requestInit: RequestInitLike | undefined): PerRequestPost | undefined {
  try {
    const init = requestInit as RequestInitLike & { body: string; signal?: unknown };
    const endpoint =
      typeof input === 'string' ? input : input instanceof URL ? input.href : (input as { url?: unknown })?.url;
    if (typeof endpoint !== 'string') return undefined;
    const message = JSON.parse(init.body) as { id?: unknown; method?: unknown; params?: unknown };
    if (message === null || typeof message !== 'object' || typeof message.method !== 'string') return undefined;
    if (message.id === undefined || message.id === null) return undefined;
    const { name, args } = requestTarget(message.method, message.params);
    const listen = message.method === 'subscriptions/listen';
    const filter = (message.params as { notifications?: unknown } | undefined)?.notifications;
    return {
      key: reissueKey(endpoint, message.method, name, digestJson(args)),
      listenKey: listen ? `${endpoint}\u0000${digestJson(filter)}` : undefined,
      mrtr: isMrtrRetry(message.params),
      signal: (init.signal ?? undefined) as { aborted?: boolean } | undefined,
    };
  } catch {
    return undefined;
  }
}

interface Lost {
  at: number;
  idempotency: 'not_a_tool';
}

/** What the client side remembers: lost exchanges waiting for their re-issue, dropped listen streams. */
export class PerRequestClientObserver {
  private readonly lost: ReissueWindow<Lost>;
  private readonly gaps: ListenGaps;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly runtime: ForkwatchRuntime,
    readonly limits: { reissueWindowMs: number; maxTracked: number },
  ) {
    this.lost = new ReissueWindow<Lost>(limits.reissueWindowMs, limits.maxTracked);
    this.gaps = new ListenGaps(limits.maxTracked);
  }

  requestSent(post: PerRequestPost): void {
    const now = nowMs();
    this.expire(now);
    if (post.mrtr || post.listenKey !== undefined) return;
    const lost = this.lost.match(post.key, now);
    if (!lost) return;
    this.runtime.instruments.clientReissues.add(1, REISSUE.reissued);
    this.runtime.instruments.clientReissueDelaySeconds.record((now - lost.at) / 1000);
  }

  exchangeEnded(post: PerRequestPost, outcome: ClientExchangeOutcome): void {
    this.runtime.instruments.clientExchanges.add(1, EXCHANGE[outcome]);
    if (!needsReissue(outcome)) return;
    const evicted = this.lost.noteBroken(post.key, { at: nowMs(), idempotency: 'not_a_tool' });
    if (evicted) this.runtime.instruments.clientReissues.add(1, REISSUE.not_reissued);
    this.armExpiry();
  }

  listenAcknowledged(post: PerRequestPost): void {
    const gapMs = this.gaps.ack(post.listenKey!, nowMs());
    if (gapMs !== undefined) this.runtime.instruments.clientListenGapSeconds.record(gapMs / 1000);
  }

  listenEnded(post: PerRequestPost, end: StreamEnd, graceful: boolean): void {
    const outcome = judgeListenEnd(end, graceful, post.signal?.aborted === true);
    this.runtime.instruments.clientListenStreams.add(1, LISTEN[outcome]);
    if (outcome === 'dropped') this.gaps.noteDrop(post.listenKey!, nowMs());
  }

  private expire(now: number): void {
    for (const _ of this.lost.expire(now)) this.runtime.instruments.clientReissues.add(1, REISSUE.not_reissued);
  }

  /** Lost exchanges nobody re-issued are counted when their window ends, on an unref'd timer. */
  private armExpiry(): void {
    if (this.timer) return;
    const next = this.lost.nextExpiry();
    if (next === undefined) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        try {
          this.expire(nowMs());
          this.armExpiry();
        } catch (error) {
          this.runtime.diag.error('expiring lost exchanges failed', error);
        }
      },
      Math.max(1, next - nowMs() + 1),
    );
    this.timer.unref?.();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

const observers = new WeakMap<ForkwatchRuntime, PerRequestClientObserver>();

export function perRequestClientOf(runtime: ForkwatchRuntime): PerRequestClientObserver {
  const limits = runtime.settings.perRequest;
  let observer = observers.get(runtime);
  if (!observer || observer.limits !== limits) {
    observer?.dispose();
    observer = new PerRequestClientObserver(runtime, limits);
    observers.set(runtime, observer);
  }
  return observer;
}

/** Sends the POST through `original` and observes how its response ends. Returns what `original` returns. */
export function observePerRequestPost(
  original: FetchLike,
  self: unknown,
  input: unknown,
  init: RequestInitLike | undefined,
  post: PerRequestPost,
  runtime: ForkwatchRuntime,
): unknown {
  const observer = perRequestSent(post, runtime);
  const result = original.call(self, input, init);
  if (!observer) return result;
  return Promise.resolve(result).then(
    response => {
      try {
        watchResponse(response as WebResponseLike, post, observer, runtime);
      } catch (error) {
        runtime.diag.error('observing a per-request response failed', error);
      }
      return response;
    },
    error => {
      perRequestUnanswered(post, observer, runtime);
      throw error;
    },
  );
}

/** The POST leaves: a re-issue of a lost one is counted. Undefined (and a diagnostic) if that failed. */
export function perRequestSent(post: PerRequestPost, runtime: ForkwatchRuntime): PerRequestClientObserver | undefined {
  try {
    const observer = perRequestClientOf(runtime);
    observer.requestSent(post);
    return observer;
  } catch (error) {
    runtime.diag.error('recording a per-request POST failed; this exchange is not observed', error);
    return undefined;
  }
}

/** The request was sent and no response came back: lost like a broken stream (unless the app aborted). */
export function perRequestUnanswered(
  post: PerRequestPost,
  observer: PerRequestClientObserver,
  runtime: ForkwatchRuntime,
): void {
  try {
    if (post.listenKey === undefined) observer.exchangeEnded(post, post.signal?.aborted ? 'cancelled' : 'broken');
  } catch (recordError) {
    runtime.diag.error('recording a failed POST failed', recordError);
  }
}

/**
 * What the response's status and content type say, before any byte of its body: the stream to watch, if any. A
 * per-request exchange the wire observer watched, whatever the answer.
 */
export function exchangeResponded(
  status: number,
  contentType: string,
  hasBody: boolean,
  post: PerRequestPost,
  observer: PerRequestClientObserver,
  runtime: ForkwatchRuntime,
): PerRequestStreamWatch | undefined {
  const listen = post.listenKey !== undefined;
  runtime.wireJudged();
  if (status < 200 || status >= 300) {
    if (!listen) observer.exchangeEnded(post, 'failed');
    return undefined;
  }
  if (!contentType.includes('text/event-stream') || !hasBody) {
    // A JSON body is the terminal response itself (or, for a listen request, its in-band error).
    if (!listen) observer.exchangeEnded(post, 'completed');
    return undefined;
  }
  return new PerRequestStreamWatch(post, observer, runtime);
}

function watchResponse(
  response: WebResponseLike | null | undefined,
  post: PerRequestPost,
  observer: PerRequestClientObserver,
  runtime: ForkwatchRuntime,
): void {
  const status = typeof response?.status === 'number' ? response.status : 0;
  const contentType = String(response?.headers?.get?.('content-type') ?? '');
  const watch = exchangeResponded(status, contentType, !!response?.body, post, observer, runtime);
  if (!watch) return;
  const observed = observeResponseBody(
    response!,
    body => passThrough(body, watch),
    error => runtime.diag.error('observing a per-request stream failed; not observed', error),
  );
  if (!observed) runtime.diag.debug('a per-request SSE Response that is not a Node fetch Response: not observed');
}

/**
 * One per-request SSE response stream, fed chunk by chunk (by the pass-through body on the fetch wrapper, by
 * undici's diagnostics channel on Node 24: channel-watches.ts, fed by undici-channels.ts), ended once.
 */
export class PerRequestStreamWatch {
  private readonly listen: boolean;
  private terminal = false;
  private ended = false;
  private readonly scanner: SseDataScanner;

  constructor(
    private readonly post: PerRequestPost,
    private readonly observer: PerRequestClientObserver,
    private readonly runtime: ForkwatchRuntime,
  ) {
    this.listen = post.listenKey !== undefined;
    this.scanner = new SseDataScanner((data, truncated) => this.frame(data, truncated));
  }

  push(chunk: Uint8Array): void {
    this.safe(() => this.scanner.push(chunk));
  }

  end(how: StreamEnd): void {
    this.safe(() => {
      if (this.ended) return;
      this.ended = true;
      if (how === 'eof') this.scanner.end();
      if (this.terminal) return;
      if (this.listen) this.observer.listenEnded(this.post, how, false);
      else this.observer.exchangeEnded(this.post, judgeStreamEnd(how, false, this.post.signal?.aborted === true));
    });
  }

  private frame(data: string, truncated: boolean): void {
    const kind = classifyFrameData(data, truncated);
    if (kind === 'ack' && this.listen) this.observer.listenAcknowledged(this.post);
    if (kind !== 'terminal' || this.terminal) return;
    // The terminal response ends the exchange (a listen stream's result is its graceful close), whatever follows.
    this.terminal = true;
    if (this.listen) this.observer.listenEnded(this.post, 'eof', true);
    else this.observer.exchangeEnded(this.post, 'completed');
  }

  private safe(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.runtime.diag.error('per-request stream observer failed', error);
    }
  }
}

/** The body handed to the app: the same chunks, each shown to the watch first. */
function passThrough(body: ReadableStream<Uint8Array>, watch: PerRequestStreamWatch): ReadableStream<Uint8Array> {
  // The source's reader is taken on the app's first read, not before (response-body.ts).
  const reader = lazyReader(body);
  return passThroughStream(body, {
    async pull(controller) {
      // Until something is handed on: an empty chunk cannot go into a byte stream, and a pull that enqueues nothing
      // would not be called again.
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader().read();
        } catch (error) {
          watch.end('error');
          controller.error(error);
          return;
        }
        if (chunk.done) {
          watch.end('eof');
          controller.close();
          return;
        }
        if (skipsChunk(controller, chunk.value)) continue;
        if (isBytes(chunk.value)) watch.push(chunk.value);
        controller.enqueue(chunk.value);
        return;
      }
    },
    cancel(reason) {
      watch.end('cancel');
      return reader().cancel(reason);
    },
  });
}
