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
 *   flight). Only the standalone stream: a client that drops a request stream may simply have given up on it.
 *
 * When pending events count as undelivered (the decision, made to never page on a healthy or crashed client):
 * - Nothing is judged while the session shows no sign of life here. The window starts at the first *activity* of
 *   the session after the events became pending (any request, a DELETE, a GET, an event delivered live on another
 *   stream of the session). A healthy resume, however late, is itself activity that arrives with its replay, so it
 *   counts nothing; a slow reconnect within the window counts nothing.
 * - When the window has ended, the events are *overdue*, and still nothing is counted: a client that was cut, sent
 *   one more request and then crashed looks exactly like this. They count with a loss reason only when the session
 *   proves it is alive here after the window, by a request (not a GET: a late resume may be coming for them):
 *   `dropped` without a store, `no_listener` for the standalone stream of a session that never opened a GET here
 *   (split-brain routing, clients that never listen), otherwise `stream_moved` (it resumed elsewhere, or gave up
 *   on the stream). A live client in those states keeps talking, so the signal comes with its next request.
 * - When a session closes, expires here (idle for `maxIdleMs`) or is evicted by the session cap, whatever is still
 *   pending or overdue is `abandoned`: the client went away, which is not a fork and never pages.
 * - A counter is never retracted: a client that keeps sending requests here past the window while its stream is
 *   down, and only then resumes here (an app calling resumeStream much later; the SDK itself gives up after two
 *   retries, 2.5 s with its defaults), was counted `stream_moved` and its late replay does not undo it. The default
 *   window (30 s) is ten times the SDK's full retry schedule and its maximum reconnect delay.
 *
 * Memory: per session with pending events, a few numbers and one small record per stream with pending events
 * (capped at `maxPendingStreams`); a session with nothing pending holds two fields and the times of its last
 * INFLIGHT_WRITES_KEPT live standalone writes in a WeakMap keyed by its transport. No per-event storage. Sessions with pending events are capped at `maxSessions` (oldest forgotten first).
 */

/** Mirrors SERVER_UNDELIVERED_REASONS in names.ts (the core imports nothing from outside). */
export type UndeliveredReason = 'stream_moved' | 'no_listener' | 'dropped' | 'abandoned';

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

/** SDK client defaults: first retry after 1 s, then x1.5, at most 30 s apart, 2 retries. */
export const DEFAULT_DELIVERY_WINDOW_MS = 30_000;

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

class PendingStream {
  count = 0;
  /** Written live just before the client's connection dropped: settled by any replay of the stream here. */
  inflight = 0;
  /** First activity of the session after these events became pending; the window runs from here. */
  awakeAt: number | undefined = undefined;
  constructor(
    readonly replayable: boolean,
    readonly standalone: boolean,
  ) {}
}

class SessionAccount {
  lastActiveAt: number;
  /** A GET (standalone stream or resume) of this session reached this process. */
  listenerSeen = false;
  pending: Map<string, PendingStream> | undefined = undefined;
  /** Times of the last live writes on the standalone stream (a ring), for the in-flight check. */
  recentWrites: number[] | undefined = undefined;
  recentNext = 0;
  constructor(now: number) {
    this.lastActiveAt = now;
  }
}

export class DeliveryLedger<K extends object> {
  readonly options: DeliveryLedgerOptions;
  private readonly accounts = new WeakMap<K, SessionAccount>();
  /** Sessions with pending events, in order of their last activity (oldest first). */
  private readonly pendingSessions = new Map<K, SessionAccount>();

  constructor(
    options: Partial<DeliveryLedgerOptions>,
    private readonly report: UndeliveredReport<K>,
  ) {
    const d = DEFAULT_DELIVERY_LEDGER_OPTIONS;
    this.options = {
      windowMs: nonNegative(options.windowMs, d.windowMs),
      maxSessions: positiveInt(options.maxSessions, d.maxSessions),
      maxIdleMs: positiveInt(options.maxIdleMs, d.maxIdleMs),
      maxPendingStreams: positiveInt(options.maxPendingStreams, d.maxPendingStreams),
      inflightMs: nonNegative(options.inflightMs, d.inflightMs),
    };
  }

  /** Sessions that hold pending events. */
  get sessionsWithPending(): number {
    return this.pendingSessions.size;
  }

  /**
   * Streams whose session showed activity since their events went pending and whose window has not ended yet at
   * `now`: until then a resume may still settle them.
   */
  streamsInWindow(now: number): number {
    let n = 0;
    for (const account of this.pendingSessions.values()) {
      for (const stream of account.pending!.values()) if (stream.awakeAt !== undefined && !this.isDue(stream, now)) n++;
    }
    return n;
  }

  /** Pending events of a session (all its streams), for tests and diagnostics. */
  pendingEvents(key: K): number {
    let total = 0;
    for (const stream of this.accounts.get(key)?.pending?.values() ?? []) total += pendingCount(stream);
    return total;
  }

  /** One event of the session was stored (or had to be written without a store). */
  stored(key: K, streamId: string, event: StoredEvent, now: number): void {
    if (event.open) {
      // Written to a connection here: the client is reading from this process.
      if (event.standalone && event.replayable) this.rememberWrite(this.account(key, now), now);
      this.activity(key, now);
      return;
    }
    this.pendingStream(key, this.account(key, now), streamId, event, now).count++;
  }

  /**
   * The client's connection for the session's standalone stream dropped (the other end closed it; the server did
   * not end it). Its writes of the last `inflightMs` become pending as in flight.
   */
  connectionDropped(key: K, streamId: string, now: number): void {
    const account = this.accounts.get(key);
    const writes = account?.recentWrites;
    if (account === undefined || writes === undefined) return;
    let inflight = 0;
    for (const at of writes) if (now - at <= this.options.inflightMs) inflight++;
    account.recentWrites = undefined;
    if (inflight === 0) return;
    this.pendingStream(key, account, streamId, STANDALONE_REPLAYABLE, now).inflight += inflight;
  }

  private rememberWrite(account: SessionAccount, now: number): void {
    if (account.recentWrites === undefined) {
      account.recentWrites = [];
      account.recentNext = 0;
    }
    account.recentWrites[account.recentNext] = now;
    account.recentNext = (account.recentNext + 1) % INFLIGHT_WRITES_KEPT;
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
      if (stream !== undefined) this.judgeStream(key, account, streamId, stream, now, true);
      if (pending.size >= this.options.maxPendingStreams) {
        const [oldestId, oldest] = pending.entries().next().value!;
        this.judgeStream(key, account, oldestId, oldest, now, true);
      }
      stream = new PendingStream(event.replayable, event.standalone);
      pending.set(streamId, stream);
    }
    return stream;
  }

  /** The session sent a request (of any method) to this process, or an event of it was delivered live here. */
  activity(key: K, now: number): void {
    this.touch(key, now, true);
  }

  /** A GET of the session reached this process: it listens here (or tried to, maybe to resume overdue events). */
  listenerOpened(key: K, now: number): void {
    const account = this.account(key, now);
    account.listenerSeen = true;
    // Writes of an earlier connection are not in flight on the new one.
    account.recentWrites = undefined;
    this.touch(key, now, false);
  }

  /** Starts the window of newly pending streams; with `provesAlive`, counts the overdue ones with their loss reason. */
  private touch(key: K, now: number, provesAlive: boolean): void {
    const account = this.account(key, now);
    account.lastActiveAt = now;
    const pending = account.pending;
    if (pending === undefined) return;
    for (const [id, stream] of [...pending]) {
      if (stream.awakeAt === undefined) stream.awakeAt = now;
      else if (provesAlive && this.isDue(stream, now)) this.judgeStream(key, account, id, stream, now, false);
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
    const account = this.accounts.get(key);
    const stream = account?.pending?.get(streamId);
    if (account === undefined || stream === undefined) return;
    stream.inflight = 0;
    if (events > 0) stream.count -= Math.min(stream.count, events);
    if (stream.count === 0) account.pending!.delete(streamId);
    this.dropIfSettled(key, account);
  }

  /** The session closed (DELETE, close(), expiry by the app): nothing can come back for its events any more. */
  closed(key: K, now: number): void {
    const account = this.accounts.get(key);
    if (account === undefined) return;
    this.settleSession(key, account, now);
    this.accounts.delete(key);
  }

  /** Forgets sessions idle for maxIdleMs (their events `abandoned`). Cheap: stops at the first recent session. */
  sweep(now: number): void {
    for (const [key, account] of this.pendingSessions) {
      if (now - account.lastActiveAt < this.options.maxIdleMs) break; // in order of activity
      this.settleSession(key, account, now);
    }
  }

  /** Forgets everything; pending events are not reported. */
  clear(): void {
    for (const key of this.pendingSessions.keys()) this.accounts.delete(key);
    this.pendingSessions.clear();
  }

  private account(key: K, now: number): SessionAccount {
    let account = this.accounts.get(key);
    if (account === undefined) {
      account = new SessionAccount(now);
      this.accounts.set(key, account);
    }
    return account;
  }

  private isDue(stream: PendingStream, now: number): boolean {
    return stream.awakeAt !== undefined && now - stream.awakeAt >= this.options.windowMs;
  }

  /** Reports a stream's events: with their loss reason when overdue and not `closing`, else `abandoned`. */
  private judgeStream(
    key: K,
    account: SessionAccount,
    id: string,
    stream: PendingStream,
    now: number,
    closing: boolean,
  ): void {
    const due = !closing && this.isDue(stream, now);
    if (!due && !closing) return;
    account.pending?.delete(id);
    // In-flight events are the weaker evidence (a clean cut had none in flight, and the client may have read them
    // all): they count only when no event stored after the drop shows the loss.
    const events = pendingCount(stream);
    if (events > 0) this.safeReport(key, due ? this.lossReason(stream, account) : 'abandoned', events);
  }

  private lossReason(stream: PendingStream, account: SessionAccount): UndeliveredReason {
    if (!stream.replayable) return 'dropped';
    if (stream.standalone && !account.listenerSeen) return 'no_listener';
    return 'stream_moved';
  }

  private settleSession(key: K, account: SessionAccount, now: number): void {
    for (const [id, stream] of [...(account.pending ?? [])]) this.judgeStream(key, account, id, stream, now, true);
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
      this.settleSession(key, account, now);
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

/** What a stream's pending events would count as now (see judgeStream). */
function pendingCount(stream: PendingStream): number {
  return stream.count > 0 ? stream.count : stream.inflight;
}

function positiveInt(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback;
}

function nonNegative(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : fallback;
}
