/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Pure decisions for protocol 2026-07-28 (per-request MCP, no sessions, no resumption): how a per-request exchange
 * ended, what a handler that finished after its exchange closed produced, which new request is a probable re-issue
 * of a broken one, and what a `tasks/get` miss means. No I/O, no clock: callers pass times in.
 */

/**
 * How a per-request exchange (one JSON-RPC request, one HTTP response) ended on the server. `unconfirmed`: its
 * terminal response was written while its request was open, but the server's peer keeps that request open after the
 * client's side broke (a balancer that hides closes, declared in the settings), so nothing shows it had a reader.
 */
export type ServerExchangeOutcome = 'delivered' | 'unconfirmed' | 'closed_before_response' | 'closed_mid_stream';

/** What the transport knew when it closed. */
export interface ExchangeCloseState {
  /** The terminal JSON-RPC response (result or error) was written to the exchange. */
  terminalDelivered: boolean;
  /** The HTTP response (JSON body or SSE stream) had been handed to the HTTP layer. */
  responseStarted: boolean;
  /** The server's peer does not pass a client's close on (HAProxy without `option abortonclose`). */
  closesHidden: boolean;
}

/**
 * Closed with its terminal response while the request was open: delivered, unless the peer hides closes (then an
 * open request proves no reader: unconfirmed). Closed before: before any HTTP response (createMcpHandler answers 499)
 * or while its SSE stream was open.
 */
export function judgeExchangeClose(state: ExchangeCloseState): ServerExchangeOutcome {
  if (state.terminalDelivered) return state.closesHidden ? 'unconfirmed' : 'delivered';
  return state.responseStarted ? 'closed_mid_stream' : 'closed_before_response';
}

export function isBrokenExchange(outcome: ServerExchangeOutcome | undefined): boolean {
  return outcome === 'closed_before_response' || outcome === 'closed_mid_stream';
}

/** A message produced for an exchange that had already closed: dropped by the SDK without an error. */
export type LateMessageKind = 'result' | 'error' | 'notification';

/**
 * A handler settled after its exchange closed. A rejection caused by the cancellation itself (the handler honoured
 * the abort signal) is no loss: the spec says closing the stream cancels the request.
 */
export function judgeLateSettlement(
  settled: { resolved: true } | { resolved: false; cancellation: boolean },
): LateMessageKind | undefined {
  if (settled.resolved) return 'result';
  return settled.cancellation ? undefined : 'error';
}

/** Whether a request's params carry an MRTR retry (SEP-2322): a legitimate new id, never a re-issue. */
export function isMrtrRetry(params: unknown): boolean {
  if (params === null || typeof params !== 'object') return false;
  const p = params as Record<string, unknown>;
  return p.inputResponses !== undefined || p.requestState !== undefined;
}

/** Idempotency of the target of a re-issued request, as the server declared it. */
export type ReissueIdempotency = 'not_idempotent' | 'idempotent' | 'not_a_tool';

export function idempotencyOf(method: string, idempotentHint: boolean | undefined): ReissueIdempotency {
  if (method !== 'tools/call') return 'not_a_tool';
  // ToolAnnotations.idempotentHint defaults to false.
  return idempotentHint === true ? 'idempotent' : 'not_idempotent';
}

/** Keys longer than this (a peer's tool name, resource URI or client id) are kept as a fixed-size digest. */
export const MAX_REISSUE_KEY_CHARS = 1024;

/**
 * The correlation key of a request: same principal, method, name and argument digest. The re-issue window holds
 * thousands of them, and the peer chooses their parts: a longer one is kept as its digest (about 30 characters). Two
 * long keys could share one, at odds of 2^-64 by chance or by a crafted name: one probable re-issue miscounted,
 * nothing else, since the key only decides what that counter adds.
 */
export function reissueKey(principal: string, method: string, name: string | undefined, argsDigest: string): string {
  const key = `${principal}\u0000${method}\u0000${name ?? ''}\u0000${argsDigest}`;
  // SOH first: a key of its own parts starts with the principal, never with a control character.
  return boundedKey(key, MAX_REISSUE_KEY_CHARS);
}

/**
 * A peer's string as a key held in memory: itself up to `maxChars`, past that a fixed-size digest (about 20
 * characters) behind SOH, which no key of a protocol's own characters starts with. Memory by bytes, whatever the peer
 * sends.
 */
export function boundedKey(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `\u0001${digestText(text)}`;
}

export interface BrokenExchange {
  at: number;
  idempotency: ReissueIdempotency;
  /** Its handler stopped on the cancellation before a like request came: whether it committed first is unknown. */
  honoured?: boolean;
}

/**
 * Broken exchanges waiting for their re-issue, by correlation key, for `windowMs`. Bounded: the oldest entry goes
 * first. One re-issue per break: a match consumes the entry.
 */
export class ReissueWindow<T extends BrokenExchange = BrokenExchange> {
  private readonly entries = new Map<string, T>();

  constructor(
    readonly windowMs: number,
    readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Remembers a broken exchange; returns the entry it pushed out (bounded memory), if any. */
  noteBroken(key: string, entry: T): T | undefined {
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size <= this.maxEntries) return undefined;
    const oldest = this.entries.keys().next().value as string;
    const evicted = this.entries.get(oldest);
    this.entries.delete(oldest);
    return evicted;
  }

  /** The broken exchange this request re-issues, if one is in the window (consumed). */
  match(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    return now - entry.at <= this.windowMs ? entry : undefined;
  }

  /** Removes and returns the entries whose window has passed (insertion order is time order). */
  expire(now: number): T[] {
    const expired: T[] = [];
    for (const [key, entry] of this.entries) {
      if (now - entry.at <= this.windowMs) break;
      this.entries.delete(key);
      expired.push(entry);
    }
    return expired;
  }

  /** When the oldest entry's window ends, or undefined when empty. */
  nextExpiry(): number | undefined {
    for (const entry of this.entries.values()) return entry.at + this.windowMs;
    return undefined;
  }
}

/** An exchange in flight as the re-issue matcher sees it: when a request with its key started during it, if one did. */
export interface OpenExchange {
  followedAt?: number;
}

/** How an exchange ended, for the matcher: its break (or unconfirmed write) to match, or nothing to match. */
export interface ExchangeEnd<T extends BrokenExchange> {
  entry: T;
  /** Broken: a later request with its key is its re-issue. Unconfirmed: only one that came while it was open. */
  broken: boolean;
}

/**
 * Re-issue matching that does not depend on whether the server hears of a break before the re-issue arrives. A
 * request whose key matches a break in the window re-issues it (the break came first); one that starts while an
 * exchange with its key is open follows that exchange, and if that exchange then breaks within `windowMs` (the close
 * notice came late, e.g. a proxy that closes the server's side after the client's), the follower was its re-issue.
 * One follower per exchange, one re-issue per break. Bounded: at most `maxEntries` keys of open exchanges.
 */
export class ReissueMatcher<T extends BrokenExchange = BrokenExchange> {
  readonly window: ReissueWindow<T>;
  private readonly open = new Map<string, Set<OpenExchange>>();

  constructor(
    readonly windowMs: number,
    readonly maxEntries: number,
  ) {
    this.window = new ReissueWindow<T>(windowMs, maxEntries);
  }

  /** Open exchanges tracked (all keys). */
  get openSize(): number {
    let n = 0;
    for (const set of this.open.values()) n += set.size;
    return n;
  }

  /** A request started: the break it re-issues when the break came first; else it may follow an open exchange. */
  started(key: string, self: OpenExchange, now: number): T | undefined {
    const matched = this.window.match(key, now);
    const same = this.open.get(key);
    if (!matched && same) {
      for (const earlier of same) {
        if (earlier.followedAt === undefined) {
          earlier.followedAt = now;
          break;
        }
      }
    }
    if (same) same.add(self);
    else {
      this.open.set(key, new Set([self]));
      if (this.open.size > this.maxEntries) this.open.delete(this.open.keys().next().value as string);
    }
    return matched;
  }

  /**
   * An exchange ended. Returns its entry when a request with its key followed it within the window (the re-issue
   * came before the close notice); else remembers a break for a later re-issue.
   */
  ended(key: string, self: OpenExchange, now: number, end: ExchangeEnd<T> | undefined): T | undefined {
    const same = this.open.get(key);
    if (same?.delete(self) && same.size === 0) this.open.delete(key);
    if (!end) return undefined;
    if (self.followedAt !== undefined && now - self.followedAt <= this.windowMs) return end.entry;
    if (end.broken) this.window.noteBroken(key, end.entry);
    return undefined;
  }
}

/** Why a `tasks/get` found no task: created here and gone (expired), or never created on this process. */
export type TaskMissReason = 'expired' | 'unknown';

export function judgeTaskMiss(createdHere: boolean, message: string | undefined): TaskMissReason {
  if (createdHere) return 'expired';
  return typeof message === 'string' && /expired/i.test(message) ? 'expired' : 'unknown';
}

/** A JSON-RPC error answering `tasks/get` that means "no such task" (SEP-2663: -32602). */
export function isTaskMissError(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { code?: unknown; message?: unknown };
  if (e.code !== -32602) return false;
  return typeof e.message === 'string' && /task/i.test(e.message) && /(not found|expired|unknown)/i.test(e.message);
}

/** The task id of a CreateTaskResult (SEP-2663), if the result is one. */
export function createdTaskId(result: unknown): string | undefined {
  if (result === null || typeof result !== 'object') return undefined;
  const task = (result as { task?: unknown }).task;
  if (task === null || typeof task !== 'object') return undefined;
  const id = (task as { taskId?: unknown }).taskId;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** A bounded set of keys with the time they were added (insertion order; the oldest goes first). */
export class BoundedRegistry {
  private readonly entries = new Map<string, number>();

  constructor(readonly maxEntries: number) {}

  add(key: string, at: number): void {
    this.entries.delete(key);
    this.entries.set(key, at);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * A stable, bounded digest of a JSON value (object keys sorted): two requests with equal arguments get equal
 * digests whatever their key order. FNV-1a over the canonical text, twice with different seeds (53 bits of the
 * pair are enough for correlation within a window; this is no security boundary).
 */
export function digestJson(value: unknown, maxChars = 65_536): string {
  return digestText(canonicalJson(value, maxChars));
}

/** Two 32-bit FNV-1a lanes and the length of `text`: a fixed-size digest, not a cryptographic one. */
function digestText(text: string): string {
  return `${fnv1a(text, 0x811c9dc5).toString(36)}${fnv1a(text, 0x01000193).toString(36)}:${text.length}`;
}

function fnv1a(text: string, seed: number): number {
  let hash = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** Canonical JSON text with sorted keys, cut at `maxChars` (a cut text still digests deterministically). */
export function canonicalJson(value: unknown, maxChars = 65_536): string {
  const out: string[] = [];
  let length = 0;
  const push = (s: string) => {
    out.push(s);
    length += s.length;
  };
  const walk = (v: unknown, depth: number): void => {
    if (length > maxChars) return;
    if (v === null || typeof v !== 'object') {
      push(v === undefined ? 'null' : (JSON.stringify(v) ?? 'null'));
      return;
    }
    if (depth > 32) {
      push('"…"');
      return;
    }
    if (Array.isArray(v)) {
      push('[');
      v.forEach((item, i) => {
        if (i > 0) push(',');
        walk(item, depth + 1);
      });
      push(']');
      return;
    }
    push('{');
    const keys = Object.keys(v as object).sort();
    keys.forEach((key, i) => {
      if (i > 0) push(',');
      push(`${JSON.stringify(key)}:`);
      walk((v as Record<string, unknown>)[key], depth + 1);
    });
    push('}');
  };
  walk(value, 0);
  const text = out.join('');
  return text.length > maxChars ? text.slice(0, maxChars) : text;
}

/** What identifies a request for re-issue correlation: the target name and the arguments, never `_meta`. */
export function requestTarget(method: string, params: unknown): { name: string | undefined; args: unknown } {
  if (params === null || typeof params !== 'object') return { name: undefined, args: undefined };
  const p = params as Record<string, unknown>;
  const name =
    typeof p.name === 'string'
      ? p.name
      : typeof p.uri === 'string'
        ? p.uri
        : typeof p.taskId === 'string'
          ? p.taskId
          : undefined;
  if (method === 'tools/call' || method === 'prompts/get') return { name, args: p.arguments };
  const { _meta, inputResponses, requestState, ...rest } = p;
  return { name, args: rest };
}
