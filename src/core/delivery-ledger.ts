/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The server's delivery ledger: for each session stream on this process, whether the events it stored (or had no
 * store for) reached a client from this process, live or by a replay.
 *
 * What is counted:
 * - an event stored while its stream had an open connection here was delivered live: nothing to judge;
 * - an event stored while its stream had no open connection here is *pending*: it reaches the client only if the
 *   client comes back here for it (a resume whose replay sends it). Without an event store it can never come back:
 *   it is pending as `dropped`;
 * - a replay of a stream here settles as many of its pending events as it sent (a store that vouches for a cursor
 *   it does not know and sends nothing settles nothing);
 * - an event written live to the session's standalone stream at most `inflightMs` before the client's connection
 *   dropped (closed by the other end, not ended by the server) may never have reached the client: bytes in flight
 *   in a proxy or a socket die with the connection. It is pending as *in flight*. Any replay of that stream here
 *   settles all of them, since what was written before the drop came either before the client's cursor or in the
 *   replay. Otherwise they count like other pending events, but only when the stream has no event stored after the
 *   drop: those are the firmer evidence, and the in-flight ones may all have been read (a clean cut has none in
 *   flight). Without an event store nothing can replay them or prove them lost: they count at once as `in_flight`,
 *   exposure. Only the standalone stream: a client that drops a request stream may simply have given up on it.
 *
 * When they count as undelivered, and with which reason, is delivery-rules.ts: one pure function and its table.
 *
 * Memory: per session with pending events, a few numbers and one small record per stream with pending events
 * (capped at `maxPendingStreams`); a session with nothing pending holds two fields and the times of its last
 * INFLIGHT_WRITES_KEPT live standalone writes in a WeakMap keyed by its transport. No per-event storage. Sessions with pending events are capped at `maxSessions` (oldest forgotten first).
 */

import { type DeliveryTrigger, type UndeliveredReason, judgePendingStream } from './delivery-rules';
import { atLeast, positiveWhole } from './numbers';
import { DEFAULT_DELIVERY_WINDOW_MS } from './defaults';

export { DEFAULT_DELIVERY_WINDOW_MS };

export type { UndeliveredReason } from './delivery-rules';

export interface DeliveryLedgerOptions {
  /** Time a session that is active here has to come back for pending events. Default 30 s. */
  windowMs: number;
  /** Sessions with pending events tracked at once. Default 10 000 (the session ledger's cap). */
  maxSessions: number;
  /** A session with pending events and no activity for this long is forgotten (its events `abandoned`). */
  maxIdleMs: number;
  /** Streams with pending events per session. Default 32. */
  maxPendingStreams: number;
  /** Writes this recent when the client's connection drops may not have reached it. Default 500 ms. */
  inflightMs: number;
}

export const DEFAULT_DELIVERY_LEDGER_OPTIONS: DeliveryLedgerOptions = {
  windowMs: DEFAULT_DELIVERY_WINDOW_MS,
  maxSessions: 10_000,
  maxIdleMs: 30 * 60_000,
  maxPendingStreams: 32,
  inflightMs: 500,
};

/** Live writes remembered per session for the in-flight check: more in flight at once count as this many. */
export const INFLIGHT_WRITES_KEPT = 8;

/** How an event was stored. */
export interface StoredEvent {
  /** The stream had an open connection on this process when the event was stored: it was written live. */
  open: boolean;
  /** An event store holds it, so a resume can replay it. False: the transport had nowhere to put it. */
  replayable: boolean;
  /** It belongs to the session's standalone (GET) stream. */
  standalone: boolean;
}

const STANDALONE_REPLAYABLE: StoredEvent = { open: false, replayable: true, standalone: true };

export type UndeliveredReport<K> = (key: K, reason: UndeliveredReason, events: number) => void;
/** Events a replay sent that were not pending here (stored by another replica of a shared store, or re-sent). */
export type UnpendingReplayReport<K> = (key: K, events: number) => void;

/*
 * The ledger keeps one account per session and one PendingStream per stream with pending events, for up to
 * `maxSessions` sessions: their yes/no facts share one small integer each (a field is 8 bytes per object).
 */
const REPLAYABLE = 1;
const STANDALONE = 2;
const BEHIND_REPLAY = 4;
const GET_SEEN = 1;
const LISTENER_SEEN = 2;
const withBit = (flags: number, bit: number, on: boolean): number => (on ? flags | bit : flags & ~bit);

class PendingStream {
  count = 0;
  /** Written live just before the client's connection dropped: settled by any replay of the stream here. */
  inflight = 0;
  /** End of the window, which starts at the session's first activity after these events became pending. */
  dueAt: number | undefined = undefined;
  /** Of `count`, the events stored since the session's last GET here: what a resume's replay may have missed. */
  sinceGet = 0;
  private flags: number;
  constructor(replayable: boolean, standalone: boolean) {
    this.flags = (replayable ? REPLAYABLE : 0) | (standalone ? STANDALONE : 0);
  }
  get replayable(): boolean {
    return (this.flags & REPLAYABLE) !== 0;
  }
  get standalone(): boolean {
    return (this.flags & STANDALONE) !== 0;
  }
  /**
   * A replay here reopened this stream without these events (they were stored while it ran): the client's cursor is
   * before them and the stream is open here, so the next replay of it re-sends them. Cleared by a live write on the
   * stream (the cursor moves past them) or a dropped connection.
   */
  get behindReplay(): boolean {
    return (this.flags & BEHIND_REPLAY) !== 0;
  }
  set behindReplay(on: boolean) {
    this.flags = withBit(this.flags, BEHIND_REPLAY, on);
  }
}

/** Times of the last live writes on the standalone stream, a ring of INFLIGHT_WRITES_KEPT, for the in-flight check. */
class RecentWrites {
  readonly times: number[] = [];
  next = 0;
  /** An event store held the last of them (a session keeps its store, or its lack of one, for its life). */
  replayable = true;
}

/** A session's account, opaque outside the ledger: held by the session's key (LedgerSessionKey). */
export class SessionAccount {
  /** The ledger it belongs to: a reconfigured instrumentation has a new ledger, which must not read the old one's. */
  readonly ledger: object;
  lastActiveAt: number;
  pending: Map<string, PendingStream> | undefined = undefined;
  recent: RecentWrites | undefined = undefined;
  private flags = 0;
  constructor(ledger: object, now: number) {
    this.ledger = ledger;
    this.lastActiveAt = now;
  }
  /** A GET of the session arrived here (a resume's replay, if any, started then). */
  get getSeen(): boolean {
    return (this.flags & GET_SEEN) !== 0;
  }
  set getSeen(on: boolean) {
    this.flags = withBit(this.flags, GET_SEEN, on);
  }
  /** A GET (standalone stream or resume) of this session reached this process. */
  get listenerSeen(): boolean {
    return (this.flags & LISTENER_SEEN) !== 0;
  }
  set listenerSeen(on: boolean) {
    this.flags = withBit(this.flags, LISTENER_SEEN, on);
  }
}

/**
 * A session as the ledger knows it: the caller's own object, one per session, which holds the session's account in a
 * field. Not an entry in a weak map per session: every garbage collection must trace each such entry (an ephemeron),
 * a cost that short sessions pay in full (issue 50).
 */
export interface LedgerSessionKey {
  deliveryAccount?: SessionAccount | undefined;
}

export class DeliveryLedger<K extends LedgerSessionKey> {
  readonly options: DeliveryLedgerOptions;
  /** Sessions with pending events, in order of their last activity (oldest first). */
  private readonly pendingSessions = new Map<K, SessionAccount>();

  constructor(
    options: Partial<DeliveryLedgerOptions>,
    private readonly report: UndeliveredReport<K>,
    private readonly reportUnpending: UnpendingReplayReport<K> = () => {},
  ) {
    const d = DEFAULT_DELIVERY_LEDGER_OPTIONS;
    this.options = {
      windowMs: atLeast(options.windowMs, 0) ?? d.windowMs,
      maxSessions: positiveWhole(options.maxSessions) ?? d.maxSessions,
      maxIdleMs: positiveWhole(options.maxIdleMs) ?? d.maxIdleMs,
      maxPendingStreams: positiveWhole(options.maxPendingStreams) ?? d.maxPendingStreams,
      inflightMs: atLeast(options.inflightMs, 0) ?? d.inflightMs,
    };
  }

  /** Some session holds pending events: the clock must keep sweeping. */
  get hasPending(): boolean {
    return this.pendingSessions.size > 0;
  }

  /** This session holds pending events. */
  hasPendingFor(key: K): boolean {
    return this.accountOf(key)?.pending !== undefined;
  }

  /** One event of the session was stored (or had to be written without a store). */
  stored(key: K, streamId: string, event: StoredEvent, now: number): void {
    const account = this.account(key, now);
    if (event.open) {
      // Written to a connection here: the client is reading from this process.
      if (event.standalone) rememberWrite(account, now, event.replayable);
      const pending = account.pending;
      // Per live event, with nothing pending (the rule): a timestamp. Otherwise the activity may start windows.
      if (pending === undefined) {
        account.lastActiveAt = now;
        return;
      }
      // A live write on a stream whose replay missed events moves the client's cursor past them: from now on they
      // wait like any pending event, a window from here.
      const behind = pending.get(streamId);
      if (behind?.behindReplay) {
        behind.behindReplay = false;
        behind.dueAt = now + this.options.windowMs;
      }
      this.touch(key, now, 'live_write');
      return;
    }
    const stream = this.pendingStream(key, account, streamId, event, now);
    stream.count++;
    if (account.getSeen) stream.sinceGet++;
  }

  /**
   * The client's connection for the session's standalone stream dropped (the other end closed it; the server did
   * not end it). Its writes of the last `inflightMs`, and the `unwritten` events stored for it whose write had not
   * come yet, become pending as in flight; with no event store behind them, they count `in_flight` at once.
   */
  connectionDropped(key: K, streamId: string, now: number, unwritten = 0): void {
    const account = this.accountOf(key);
    // Events a replay missed wait again from the session's next activity: it may resume here (and get them) or not.
    const behind = account?.pending?.get(streamId);
    if (behind?.behindReplay) {
      behind.behindReplay = false;
      behind.dueAt = undefined;
    }
    if (account === undefined) return;
    const recent = account.recent;
    // Events stored for the connection whose write had not come yet are in flight as much as the last writes.
    let inflight = Math.max(0, unwritten);
    if (recent !== undefined) for (const at of recent.times) if (now - at <= this.options.inflightMs) inflight++;
    account.recent = undefined;
    if (inflight === 0) return;
    // Without an event store no replay can settle them and no later fact can prove them lost: exposure, now.
    if (recent !== undefined && !recent.replayable) this.safeReport(key, 'in_flight', inflight);
    else this.pendingStream(key, account, streamId, STANDALONE_REPLAYABLE, now).inflight += inflight;
  }

  private pendingStream(
    key: K,
    account: SessionAccount,
    streamId: string,
    event: StoredEvent,
    now: number,
  ): PendingStream {
    let pending = account.pending;
    if (pending === undefined) {
      pending = account.pending = new Map();
      this.pendingSessions.set(key, account);
      this.capSessions(now);
    }
    let stream = pending.get(streamId);
    if (stream === undefined || stream.replayable !== event.replayable) {
      if (stream !== undefined) this.judge(key, account, streamId, stream, now, 'replaced');
      if (pending.size >= this.options.maxPendingStreams) {
        const [oldestId, oldest] = pending.entries().next().value!;
        this.judge(key, account, oldestId, oldest, now, 'evicted');
      }
      stream = new PendingStream(event.replayable, event.standalone);
      pending.set(streamId, stream);
    }
    return stream;
  }

  /** The session sent a request (of any method) to this process, or an event of it was delivered live here. */
  activity(key: K, now: number): void {
    this.touch(key, now, 'request');
  }

  /** A GET of the session reached this process: it listens here (or tried to, maybe to resume overdue events). */
  listenerOpened(key: K, now: number): void {
    const account = this.account(key, now);
    account.listenerSeen = true;
    // Writes of an earlier connection are not in flight on the new one.
    account.recent = undefined;
    account.getSeen = true;
    for (const stream of account.pending?.values() ?? []) stream.sinceGet = 0;
    this.touch(key, now, 'get');
  }

  /** Starts the window of newly pending streams and judges the others (see delivery-rules.ts). */
  private touch(key: K, now: number, trigger: DeliveryTrigger): void {
    const account = this.account(key, now);
    account.lastActiveAt = now;
    const pending = account.pending;
    if (pending === undefined) return;
    for (const [id, stream] of [...pending]) {
      if (stream.dueAt === undefined) stream.dueAt = now + this.options.windowMs;
      else this.judge(key, account, id, stream, now, trigger);
    }
    if (this.dropIfSettled(key, account)) return;
    // Keep pendingSessions in order of activity for the idle and cap checks.
    this.pendingSessions.delete(key);
    this.pendingSessions.set(key, account);
  }

  /**
   * A resume here replayed `events` events of `streamId` (its store resolved the cursor to this stream): that many
   * pending events reached the client, and every in-flight one either had before the drop or did now.
   */
  replayed(key: K, streamId: string, events: number): void {
    const account = this.accountOf(key);
    const stream = account?.pending?.get(streamId);
    const settled = stream === undefined ? 0 : Math.min(stream.count, Math.max(0, events));
    if (events > settled) this.safeReportUnpending(key, events - settled);
    if (account === undefined || stream === undefined) return;
    stream.inflight = 0;
    stream.count -= settled;
    stream.sinceGet = Math.min(stream.sinceGet, stream.count);
    if (stream.count === 0) account.pending!.delete(streamId);
    // What is left, if all of it was stored after the resume's GET, was stored while this replay ran and is not in
    // it (the SDK registers the stream after the replay): it waits behind the reopened stream. Older events a replay
    // did not send (a store that vouches for a cursor and sends nothing) are judged as before.
    else if (stream.count <= stream.sinceGet) stream.behindReplay = true;
    this.dropIfSettled(key, account);
  }

  /** The session closed (DELETE, close(), expiry by the app): nothing can come back for its events any more. */
  closed(key: K, now: number): void {
    const account = this.accountOf(key);
    if (account === undefined) return;
    this.settleSession(key, account, now, 'closed');
    key.deliveryAccount = undefined;
  }

  /** Forgets sessions idle for maxIdleMs (their events `abandoned`). Cheap: stops at the first recent session. */
  sweep(now: number): void {
    for (const [key, account] of this.pendingSessions) {
      if (now - account.lastActiveAt < this.options.maxIdleMs) break; // in order of activity
      this.settleSession(key, account, now, 'expired');
    }
  }

  /** Forgets everything; pending events are not reported. */
  clear(): void {
    for (const key of this.pendingSessions.keys()) key.deliveryAccount = undefined;
    this.pendingSessions.clear();
  }

  private account(key: K, now: number): SessionAccount {
    let account = this.accountOf(key);
    if (account === undefined) {
      account = new SessionAccount(this, now);
      key.deliveryAccount = account;
    }
    return account;
  }

  /** The session's account in this ledger, if it has one. */
  private accountOf(key: K): SessionAccount | undefined {
    const account = key.deliveryAccount;
    return account !== undefined && account.ledger === this ? account : undefined;
  }

  /** Counts a stream's events and forgets it when the rules give a reason (see delivery-rules.ts). */
  private judge(
    key: K,
    account: SessionAccount,
    id: string,
    stream: PendingStream,
    now: number,
    trigger: DeliveryTrigger,
  ): void {
    const reason = judgePendingStream(stream, account, now, trigger);
    if (reason === undefined) return;
    account.pending?.delete(id);
    // In-flight events are the weaker evidence (a clean cut had none in flight, and the client may have read them
    // all): they count only when no event stored after the drop shows the loss.
    const events = pendingCount(stream);
    if (events > 0) this.safeReport(key, reason, events);
  }

  private settleSession(key: K, account: SessionAccount, now: number, trigger: DeliveryTrigger): void {
    for (const [id, stream] of [...(account.pending ?? [])]) this.judge(key, account, id, stream, now, trigger);
    account.pending = undefined;
    this.pendingSessions.delete(key);
  }

  /** True when the session has nothing pending any more (and was dropped from the pending list). */
  private dropIfSettled(key: K, account: SessionAccount): boolean {
    if (account.pending !== undefined && account.pending.size === 0) {
      account.pending = undefined;
      this.pendingSessions.delete(key);
    }
    return account.pending === undefined;
  }

  private capSessions(now: number): void {
    while (this.pendingSessions.size > this.options.maxSessions) {
      const [key, account] = this.pendingSessions.entries().next().value!;
      this.settleSession(key, account, now, 'evicted');
    }
  }

  private safeReportUnpending(key: K, events: number): void {
    try {
      this.reportUnpending(key, events);
    } catch {
      // the reporter is the caller's; a failure there must not corrupt the ledger
    }
  }

  private safeReport(key: K, reason: UndeliveredReason, events: number): void {
    try {
      this.report(key, reason, events);
    } catch {
      // the reporter is the caller's; a failure there must not corrupt the ledger
    }
  }
}

/** What a stream's pending events would count as now (see judge). */
function pendingCount(stream: PendingStream): number {
  return stream.count > 0 ? stream.count : stream.inflight;
}

/** Read-only views of a ledger for tests and the lab; forkwatch itself never reads them. */
export interface DeliveryLedgerProbe<K extends LedgerSessionKey> {
  /** Sessions that hold pending events. */
  readonly sessionsWithPending: number;
  /** Pending events of a session (all its streams). */
  pendingEvents(key: K): number;
  /** The sessions that hold pending events, oldest activity first. */
  sessionsPending(): Iterable<K>;
  /** Streams whose window is running at `now`: until it ends a resume may still settle them. */
  streamsInWindow(now: number): number;
}

export function probeDeliveryLedger<K extends LedgerSessionKey>(ledger: DeliveryLedger<K>): DeliveryLedgerProbe<K> {
  // Element access reaches the private members on purpose: the probe is the ledger's one window for tests.
  const pendingSessions = ledger['pendingSessions'];
  return {
    get sessionsWithPending() {
      return pendingSessions.size;
    },
    sessionsPending: () => pendingSessions.keys(),
    pendingEvents(key) {
      let total = 0;
      for (const stream of ledger['accountOf'](key)?.pending?.values() ?? []) total += pendingCount(stream);
      return total;
    },
    streamsInWindow(now) {
      let n = 0;
      for (const account of pendingSessions.values()) {
        for (const stream of account.pending!.values()) if (stream.dueAt !== undefined && now < stream.dueAt) n++;
      }
      return n;
    },
  };
}

/** The time of a live write on the standalone stream, in the session's ring of the last INFLIGHT_WRITES_KEPT. */
function rememberWrite(account: SessionAccount, now: number, replayable: boolean): void {
  account.recent ??= new RecentWrites();
  const recent = account.recent;
  recent.replayable = replayable;
  recent.times[recent.next] = now;
  const next = recent.next + 1;
  recent.next = next === INFLIGHT_WRITES_KEPT ? 0 : next;
}
