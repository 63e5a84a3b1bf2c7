/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * When the delivery ledger's pending events count as undelivered, and with which reason: one pure function of the
 * pending stream, its session's account, the time and what happened (the trigger), read from a table of rules.
 * The first row that applies decides; a row without a reason keeps the stream pending.
 *
 * The decision is made to never page on a healthy or crashed client (see delivery-ledger.ts for what makes an event
 * pending and what settles it):
 * - Nothing is judged while the session shows no sign of life here. The window starts at the first activity of the
 *   session after the events became pending (any request, a DELETE, a GET, an event delivered live on another
 *   stream of the session): `dueAt` is set then. A healthy resume, however late, is itself activity that arrives with
 *   its replay, so it counts nothing; a slow reconnect within the window counts nothing.
 * - When the window has ended, the events are overdue, and still nothing is counted: a client that was cut, sent
 *   one more request and then crashed looks exactly like this. They count with a loss reason only when the session
 *   proves it is alive here after the window, by a request or a live write (not a GET: a late resume may be coming
 *   for them). A live client keeps talking, so the signal comes with its next request.
 * - When a session closes, expires here (idle for `maxIdleMs`), is evicted by the session cap, or a stream is
 *   replaced or evicted by the stream cap, whatever is still pending is `abandoned`: the client went away, which is
 *   not a fork and never pages.
 * - A counter is never retracted: a client that keeps sending requests here past the window while its stream is
 *   down, and only then resumes here, was counted `stream_moved` and its late replay does not undo it. The default
 *   window (30 s) is ten times the SDK's full retry schedule and its maximum reconnect delay.
 */

/**
 * Mirrors SERVER_UNDELIVERED_REASONS in names.ts (the core imports nothing from outside). `in_flight` is no rule's:
 * the ledger counts it at the drop itself (delivery-ledger.ts, connectionDropped).
 */
export type UndeliveredReason = 'stream_moved' | 'no_listener' | 'dropped' | 'abandoned' | 'in_flight';

/**
 * What happened to a session with pending streams: `request` (any method but GET) and `live_write` (an event of the
 * session delivered live here) prove it alive; `get` is a GET here; the rest end the stream's wait: `closed`
 * (DELETE, close()), `expired` (idle for maxIdleMs), `evicted` (the session or stream cap), `replaced` (its stream
 * changed between stored and store-less events).
 */
export type DeliveryTrigger = 'request' | 'live_write' | 'get' | 'closed' | 'expired' | 'evicted' | 'replaced';

/** What the rules read of a pending stream. */
export interface PendingStreamFacts {
  /** An event store holds its events: a resume can replay them. */
  readonly replayable: boolean;
  /** It is the session's standalone (GET) stream. */
  readonly standalone: boolean;
  /** End of its window: set at the session's first activity after the events went pending. */
  readonly dueAt: number | undefined;
  /** A replay here reopened the stream without these events, and nothing was written live on it since. */
  readonly behindReplay: boolean;
}

/** What the rules read of the session's account. */
export interface SessionFacts {
  /** A GET (standalone stream or resume) of this session reached this process. */
  readonly listenerSeen: boolean;
}

export interface DeliveryRule {
  /** The rule in words. */
  readonly says: string;
  readonly applies: (
    stream: PendingStreamFacts,
    session: SessionFacts,
    now: number,
    trigger: DeliveryTrigger,
  ) => boolean;
  /** The reason the stream's events count with; undefined: they stay pending. */
  readonly reason: UndeliveredReason | undefined;
  /** Titles of the tests in test/core/delivery-ledger.test.ts that pin this row. */
  readonly tests: readonly string[];
}

const ENDS_WAIT: Readonly<Record<DeliveryTrigger, boolean>> = {
  request: false,
  live_write: false,
  get: false,
  closed: true,
  expired: true,
  evicted: true,
  replaced: true,
};

export const DELIVERY_RULES: readonly DeliveryRule[] = [
  {
    says: 'the session closed, expired or was evicted, or the stream was replaced: the client went away',
    applies: (_stream, _session, _now, trigger) => ENDS_WAIT[trigger],
    reason: 'abandoned',
    tests: [
      'cut, one more request, then a crash: the events end abandoned, never a loss',
      'a client that crashed (no activity, then close): abandoned only',
      'a session idle for maxIdleMs is forgotten as abandoned',
      'a DELETE right after events went pending: abandoned, not a loss',
      'the session cap forgets the oldest sessions with pending events as abandoned',
      'streams per session are capped',
    ],
  },
  {
    says: 'a replay here reopened the stream without them and nothing was written on it since: the client is listening here with a cursor before them, so the next replay here re-sends them',
    applies: stream => stream.behindReplay,
    reason: undefined,
    tests: [
      'events a replay missed wait behind the reopened stream: not judged while it stays quiet, settled by the next replay',
    ],
  },
  {
    says: 'a GET is no proof of loss: a late resume may replay the events',
    applies: (_stream, _session, _now, trigger) => trigger === 'get',
    reason: undefined,
    tests: ['a GET after the window is no proof of loss: a late resume may replay the events'],
  },
  {
    says: 'the window has not ended (or not started): the client may still come back for them',
    applies: (stream, _session, now) => stream.dueAt === undefined || now < stream.dueAt,
    reason: undefined,
    tests: [
      'a resume within the window that replays the events counts nothing',
      'a session with no activity after its events went pending never reports a loss reason',
    ],
  },
  {
    says: 'no event store: the events had nowhere to go',
    applies: stream => !stream.replayable,
    reason: 'dropped',
    tests: ['no event store and nowhere to write: dropped, once the session shows activity'],
  },
  {
    says: 'standalone events of a session that never opened a GET here (split-brain routing, clients that never listen)',
    applies: (stream, session) => stream.standalone && !session.listenerSeen,
    reason: 'no_listener',
    tests: ['standalone events of a session that never opened a GET here: no_listener'],
  },
  {
    says: 'alive here after the window and never came back for them: it resumed elsewhere or gave up on the stream',
    applies: () => true,
    reason: 'stream_moved',
    tests: [
      'the session goes on talking here and never comes back for its events: stream_moved on its first request after the window',
    ],
  },
];

/** The reason a pending stream's events count with now, or undefined while they stay pending. */
export function judgePendingStream(
  stream: PendingStreamFacts,
  session: SessionFacts,
  now: number,
  trigger: DeliveryTrigger,
): UndeliveredReason | undefined {
  for (const rule of DELIVERY_RULES) if (rule.applies(stream, session, now, trigger)) return rule.reason;
  return undefined;
}
