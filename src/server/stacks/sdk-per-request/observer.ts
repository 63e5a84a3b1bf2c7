/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The one observer of the 2.x per-request server path (protocol 2026-07-28): the patches in patch.ts hand
 * it facts (an exchange started, closed, a handler settled, a message came late, an event was published) and it
 * records them. Decisions are the pure functions of core/per-request.ts. Memory is bounded: exchanges live in a
 * WeakMap on their transport, broken exchanges in a bounded re-issue window, task ids and tool annotations in
 * bounded registries.
 */
import type { Attributes } from '@opentelemetry/api';
import {
  BoundedRegistry,
  type BrokenExchange,
  type OpenExchange,
  type ReissueIdempotency,
  ReissueMatcher,
  type ServerExchangeOutcome,
  createdTaskId,
  digestJson,
  idempotencyOf,
  isBrokenExchange,
  isMrtrRetry,
  isTaskMissError,
  judgeExchangeClose,
  judgeLateSettlement,
  judgeTaskMiss,
  reissueKey,
  requestTarget,
} from '../../../core/per-request';
import {
  LISTEN_PUBLISH_OUTCOMES,
  REISSUE_IDEMPOTENCY,
  SERVER_EXCHANGE_OUTCOMES,
  SERVER_LATE_MESSAGE_KINDS,
  TASK_MISS_REASONS,
} from '../../../shared/names';
import { type ForkwatchRuntime, nowMs } from '../../../shared/runtime';

import type { PerRequestLimits } from '../../../shared/runtime';

export type { PerRequestLimits };

/** One exchange of a PerRequestHTTPServerTransport, from handleMessage to close. */
export interface ServerExchange {
  readonly method: string;
  readonly key: string;
  readonly idempotency: ReissueIdempotency;
  readonly taskId: string | undefined;
  outcome: ServerExchangeOutcome | undefined;
  /** Its place among the open exchanges the re-issue matcher holds (not for MRTR retries, which never re-issue). */
  open: OpenExchange | undefined;
  /** Its entry in the re-issue window, once broken. */
  broken?: BrokenExchange;
  /** A like request came while it was open and it then broke: counted once its handler settles (how it ended). */
  followed?: BrokenExchange;
}

/** The transport's private state the close decision reads (plain properties at runtime). */
export interface PerRequestTransportState {
  _terminalDelivered?: unknown;
  _deferredResponse?: { settled?: unknown } | undefined;
  _sse?: unknown;
}

type Attrs<T extends readonly string[]> = Record<T[number], Attributes>;
function attrs<T extends readonly string[]>(key: string, values: T): Attrs<T> {
  return Object.fromEntries(values.map(v => [v, Object.freeze({ [key]: v })])) as Attrs<T>;
}
const EXCHANGE = attrs('outcome', SERVER_EXCHANGE_OUTCOMES);
const LATE = attrs('kind', SERVER_LATE_MESSAGE_KINDS);
const REISSUE = attrs('idempotency', REISSUE_IDEMPOTENCY);
const PUBLISH = attrs('outcome', LISTEN_PUBLISH_OUTCOMES);
const TASK_MISS = attrs('reason', TASK_MISS_REASONS);

export class PerRequestServerObserver {
  private readonly exchanges = new WeakMap<object, ServerExchange>();
  /** Server instances that served a per-request exchange: their notifications after close are late. */
  private readonly perRequestServers = new WeakSet<object>();
  private readonly reissues: ReissueMatcher;
  private readonly tasks: BoundedRegistry;
  private readonly idempotentTools = new Map<string, boolean>();

  constructor(
    private readonly runtime: ForkwatchRuntime,
    readonly limits: PerRequestLimits,
  ) {
    this.reissues = new ReissueMatcher(limits.reissueWindowMs, limits.maxTracked);
    this.tasks = new BoundedRegistry(limits.maxTracked);
  }

  /** A JSON-RPC request reached `handleMessage` of a per-request transport. */
  exchangeStarted(transport: object, message: unknown, authInfo: unknown): void {
    const m = message as { id?: unknown; method?: unknown; params?: unknown };
    if (typeof m?.method !== 'string' || m.id === undefined) return;
    const { name, args } = requestTarget(m.method, m.params);
    const exchange: ServerExchange = {
      method: m.method,
      key: reissueKey(principalOf(authInfo), m.method, name, digestJson(args)),
      idempotency: idempotencyOf(m.method, name === undefined ? undefined : this.idempotentTools.get(name)),
      taskId: m.method === 'tasks/get' ? name : undefined,
      outcome: undefined,
      open: undefined,
    };
    this.exchanges.set(transport, exchange);
    const now = nowMs();
    this.reissues.window.expire(now);
    if (isMrtrRetry(m.params)) return;
    exchange.open = {};
    const reissued = this.reissues.started(exchange.key, exchange.open, now);
    if (reissued) this.countReissue(reissued);
  }

  /** A like request after a break: apart when the break's handler had stopped on the cancellation. */
  private countReissue(entry: BrokenExchange): void {
    const counter = entry.honoured
      ? this.runtime.instruments.serverReissuesAfterHonouredCancel
      : this.runtime.instruments.serverProbableReissues;
    counter.add(1, REISSUE[entry.idempotency]);
  }

  /** The transport is closing (once); reads whether its terminal response went out. */
  exchangeClosing(transport: object, state: PerRequestTransportState): void {
    const exchange = this.exchanges.get(transport);
    if (!exchange || exchange.outcome !== undefined) return;
    exchange.outcome = judgeExchangeClose({
      terminalDelivered: state._terminalDelivered === true,
      responseStarted: state._sse !== undefined || state._deferredResponse?.settled === true,
      closesHidden: this.limits.balancerHidesCloses,
    });
    this.runtime.instruments.serverExchanges.add(1, EXCHANGE[exchange.outcome]);
    if (!exchange.open) return;
    // A break, or (behind a balancer that hides closes) a write nobody confirmed: a same-key request that came while
    // it was open, or for a break one that comes within the window, is its probable re-issue, whichever came first.
    const broken = isBrokenExchange(exchange.outcome);
    const now = nowMs();
    if (broken) exchange.broken = { at: now, idempotency: exchange.idempotency };
    const end =
      broken || exchange.outcome === 'unconfirmed'
        ? { entry: exchange.broken ?? { at: now, idempotency: exchange.idempotency }, broken }
        : undefined;
    // A like request that came while this one was still open: behind hidden closes its re-issue now (the handler
    // already answered); after a break, once its handler settles, since concurrent like calls of which one is
    // cancelled on purpose look the same until the cancelled one's handler says whether it stopped.
    const reissued = this.reissues.ended(exchange.key, exchange.open, now, end);
    if (!reissued) return;
    if (broken) exchange.followed = reissued;
    else this.countReissue(reissued);
  }

  /** `send` on a transport that had already closed: the SDK returns without writing. */
  lateSend(transport: object, message: unknown): void {
    if (!this.exchanges.has(transport)) return;
    const m = message as { result?: unknown; error?: unknown; method?: unknown };
    const kind = m?.error !== undefined ? 'error' : m?.result !== undefined ? 'result' : 'notification';
    this.runtime.instruments.serverLateMessages.add(1, LATE[kind]);
  }

  /** The exchange a handler of this server instance serves, if it is a per-request one. */
  exchangeOf(transport: unknown): ServerExchange | undefined {
    if (transport === null || typeof transport !== 'object') return undefined;
    return this.exchanges.get(transport);
  }

  servedPerRequest(server: object): void {
    this.perRequestServers.add(server);
  }

  /** A notification for a request sent by a server whose per-request exchange is over (`_transport` is gone). */
  lateNotification(server: object): void {
    if (this.perRequestServers.has(server)) this.runtime.instruments.serverLateMessages.add(1, LATE.notification);
  }

  handlerResolved(exchange: ServerExchange, result: unknown, signal: AbortSignalLike | undefined): void {
    const taskId = createdTaskId(result);
    const late = isBrokenExchange(exchange.outcome);
    if (late) {
      // McpServer turns a tool's exception into an `isError` result: the cancellation itself is no lost result.
      const kind = isToolError(result)
        ? judgeLateSettlement({ resolved: false, cancellation: isCancellationResult(result, signal) })
        : 'result';
      if (kind) this.runtime.instruments.serverLateMessages.add(1, LATE[kind]);
      else this.stoppedOnCancellation(exchange);
      this.settledFollowed(exchange);
    }
    if (taskId === undefined) return;
    this.tasks.add(taskId, nowMs());
    if (late) this.runtime.instruments.serverOrphanedTasks.add(1);
  }

  handlerRejected(exchange: ServerExchange, error: unknown, signal: AbortSignalLike | undefined): void {
    if (exchange.method === 'tasks/get' && exchange.taskId !== undefined && isTaskMissError(error)) {
      const reason = judgeTaskMiss(this.tasks.has(exchange.taskId), (error as { message?: string }).message);
      this.runtime.instruments.serverTaskMisses.add(1, TASK_MISS[reason]);
    }
    if (!isBrokenExchange(exchange.outcome)) return;
    const kind = judgeLateSettlement({ resolved: false, cancellation: isCancellation(error, signal) });
    if (kind) this.runtime.instruments.serverLateMessages.add(1, LATE[kind]);
    else this.stoppedOnCancellation(exchange);
    this.settledFollowed(exchange);
  }

  /** The handler of a broken exchange a like request followed settled: that request is counted now. */
  private settledFollowed(exchange: ServerExchange): void {
    const followed = exchange.followed;
    if (!followed) return;
    exchange.followed = undefined;
    this.countReissue(followed);
  }

  /**
   * The handler honoured the cancellation: no late error, and a like request after it is counted apart from the
   * probable re-issues (an app that cancels and calls again looks the same to the server). It stays a signal: the
   * handler may have committed its side effect before it looked at the signal ("cancelled, so it ran once" is not
   * a fact the server has); only the tool's idempotentHint says a second run is harmless.
   */
  private stoppedOnCancellation(exchange: ServerExchange): void {
    if (exchange.broken) exchange.broken.honoured = true;
  }

  /** A tool registered with its annotations (McpServer.registerTool). */
  toolRegistered(name: unknown, config: unknown): void {
    if (typeof name !== 'string') return;
    const hint = (config as { annotations?: { idempotentHint?: unknown } } | undefined)?.annotations?.idempotentHint;
    this.idempotentTools.delete(name);
    this.idempotentTools.set(name, hint === true);
    if (this.idempotentTools.size > this.limits.maxTracked) {
      this.idempotentTools.delete(this.idempotentTools.keys().next().value as string);
    }
  }

  published(listeners: number | undefined): void {
    if (listeners === undefined) return;
    this.runtime.instruments.serverListenPublishes.add(1, listeners > 0 ? PUBLISH.listened : PUBLISH.no_listener);
  }
}

export interface AbortSignalLike {
  readonly aborted?: boolean;
  readonly reason?: unknown;
}

/** The handler's rejection is the cancellation itself: the abort reason, an AbortError or "connection closed". */
function isCancellation(error: unknown, signal: AbortSignalLike | undefined): boolean {
  if (signal?.aborted !== true) return false;
  if (error === signal.reason) return true;
  const e = error as { name?: unknown; code?: unknown; message?: unknown } | null;
  if (e?.name === 'AbortError') return true;
  const reasonCode = (signal.reason as { code?: unknown } | null)?.code;
  return reasonCode !== undefined && e?.code === reasonCode;
}

function isToolError(result: unknown): boolean {
  return (result as { isError?: unknown } | null)?.isError === true;
}

/** A tool error result whose text is the abort reason (the handler rethrew the cancellation). */
function isCancellationResult(result: unknown, signal: AbortSignalLike | undefined): boolean {
  if (signal?.aborted !== true) return false;
  const content = (result as { content?: unknown }).content;
  const first = Array.isArray(content) ? (content[0] as { text?: unknown } | undefined)?.text : undefined;
  if (typeof first !== 'string') return false;
  const reason = (signal.reason as { message?: unknown } | null)?.message;
  return (typeof reason === 'string' && reason !== '' && first.includes(reason)) || /abort/i.test(first);
}

/** Who sent a request: the OAuth client id, else a digest of the token, else anonymous. Never a label. */
function principalOf(authInfo: unknown): string {
  const auth = authInfo as { clientId?: unknown; token?: unknown } | undefined;
  if (typeof auth?.clientId === 'string' && auth.clientId !== '') return `client:${auth.clientId}`;
  if (typeof auth?.token === 'string' && auth.token !== '') return `token:${digestJson(auth.token)}`;
  return 'anonymous';
}

const observers = new WeakMap<ForkwatchRuntime, PerRequestServerObserver>();

/** The runtime's per-request server observer, created on first use with the limits its settings hold now. */
export function perRequestServerOf(runtime: ForkwatchRuntime): PerRequestServerObserver {
  const limits = runtime.settings.perRequest;
  let observer = observers.get(runtime);
  if (!observer || observer.limits !== limits) {
    observer = new PerRequestServerObserver(runtime, limits);
    observers.set(runtime, observer);
  }
  return observer;
}
