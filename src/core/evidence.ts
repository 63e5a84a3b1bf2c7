/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * One evidence model for every observation, on either side (issue 45): each outcome, reason, kind or state forkwatch
 * counts resolves to exactly one of
 * - `proven_loss`: the ids or the fleet's own records show events (or a result) that never arrived; with a count
 *   where the ids give it. Pages read these only.
 * - `proven_continuity`: the ids or the records show nothing a live client wanted was lost.
 * - `exposure`: a gap nobody can prove either way (a dropped cursor, an inconclusive or unverified resume, an
 *   unconfirmed delivery). Counted, shown on the dashboard beside loss, ticketed when it recurs; never a page,
 *   never dropped.
 *
 * The table is the only place that says which is which: the SLOs, the pack's page and dashboard checks and the span
 * attribute `forkwatch.evidence` read it (src/shared/names.ts maps each metric family to its subject). Each row names
 * the evidence it needs, the case that motivates it and the test files that pin it. Pure: imports nothing.
 */

export type Evidence = 'proven_loss' | 'proven_continuity' | 'exposure';
export const EVIDENCE_CLASSES: readonly Evidence[] = ['proven_loss', 'proven_continuity', 'exposure'];

/**
 * What an observation is about: a label of one metric family (its values are the rows), or a whole family that has
 * no such label (value `*`). names.ts says which family and label each subject is.
 */
export type EvidenceSubject =
  | 'client_resume'
  | 'client_fork'
  | 'client_duplicate_events'
  | 'client_live_gaps'
  | 'client_foreign_responses'
  | 'client_exchange'
  | 'client_reissue'
  | 'client_listen_stream'
  | 'client_revived'
  | 'client_empty_reconnect'
  | 'server_resume'
  | 'server_undelivered'
  | 'server_shared_unreplayed'
  | 'server_replayed_unpending'
  | 'server_fleet_undelivered'
  | 'server_exchange'
  | 'server_late_message'
  | 'server_probable_reissues'
  | 'server_reissues_after_honoured_cancel'
  | 'server_listen_publish'
  | 'server_orphaned_tasks'
  | 'server_task_miss'
  | 'server_revived'
  | 'server_empty_repeat_gets';

/** The value of a family without an outcome-like label. */
export const WHOLE_FAMILY = '*';

export interface EvidenceRow {
  readonly subject: EvidenceSubject;
  /** The label value (outcome, reason, kind, state), or WHOLE_FAMILY. */
  readonly value: string;
  readonly evidence: Evidence;
  /** Whether the row's proof gives a count of lost events (the skipped ids, the ledger's events). */
  readonly counted?: boolean;
  /** The evidence the row needs, in words. */
  readonly needs: string;
  /** The case that motivates it. */
  readonly motivatedBy: string;
  /** Test files that pin it (each names the value). */
  readonly tests: readonly string[];
}

const row = (
  subject: EvidenceSubject,
  value: string,
  evidence: Evidence,
  needs: string,
  motivatedBy: string,
  tests: readonly string[],
  counted?: boolean,
): EvidenceRow => ({ subject, value, evidence, needs, motivatedBy, tests, ...(counted ? { counted } : {}) });

const LAB = 'test/client/lab-scenarios.test.ts';
const CURSORLESS = 'test/client/cursorless-reconnect.test.ts';
const VERDICT = 'test/core/verdict.test.ts';
const SERVER = 'test/server/instrumentation.test.ts';
const DELIVERY = 'test/server/node-transport-v1.24.test.ts';
const PER_REQUEST = 'test/per-request/server-client.test.ts';
const HIDDEN = 'test/per-request/hidden-breaks.test.ts';
const REVIVED = 'test/revived/revived-sessions.test.ts';

export const EVIDENCE_RULES: readonly EvidenceRow[] = [
  // Client resumes (core/verdict.ts): the first frame of a resumed stream against the cursor.
  row(
    'client_resume',
    'resumed',
    'proven_continuity',
    "the first frame's id continues the cursor: the same stream and a larger sequence (or, after a dropped cursor, every id between them consumed on a numbering learned dense)",
    'a resume on the process that holds the log',
    [VERDICT],
  ),
  row(
    'client_resume',
    'forked',
    'proven_loss',
    "the first frame's id is missing, at or before the cursor, already consumed, from another stream, or the cursor was dropped with a live process holding the stream, or the ids skipped were never consumed (counted)",
    'a 200 from a process without the log (the fork lab), a cursor-less reconnect whose first id skips 7 (issue 45)',
    [LAB, CURSORLESS],
    true,
  ),
  row(
    'client_resume',
    'unverified',
    'exposure',
    'a first frame accepted whose ids cannot prove order (the SDK’s `_GET_stream` ids, opaque ids)',
    'the SDK’s standalone stream key is every session’s',
    [LAB],
  ),
  row(
    'client_resume',
    'rejected',
    'exposure',
    'a resume refused 4xx: loud, and what was sent in the gap is unreplayed unless a retry succeeds',
    'a validating store answers 400; a router without the session 404',
    [LAB],
  ),
  row(
    'client_resume',
    'failed',
    'exposure',
    'the resume GET failed before a response: nothing tells what was sent',
    'a replica that went away mid-request',
    ['test/client/instrumentation.test.ts'],
  ),
  row(
    'client_resume',
    'inconclusive',
    'exposure',
    'no frame before the stream ended or the verdict timeout: an idle session looks the same',
    'an idle session’s resume, a rolling restart',
    [LAB],
  ),
  row(
    'client_resume',
    'rejected_stream_held',
    'exposure',
    'a 409: the stream still has a connection on the process that answered; the retry decides',
    'a dead connection a balancer holds',
    [LAB],
  ),
  row(
    'client_resume',
    'cursor_dropped_after_inconclusive',
    'exposure',
    'a reconnect without the cursor after a resume that got no frame, whose first id cannot prove a gap or its absence (SDK ids, a numbering not learned dense, no frame)',
    'a rolling restart: the replica went away; the SDK drops the cursor (typescript-sdk #2499)',
    [LAB, CURSORLESS],
  ),
  // Client forks, by reason: each is a first frame that does not continue the session's log.
  row('client_fork', 'id_missing', 'proven_loss', 'a first frame without an id', 'a process without an event store', [
    LAB,
  ]),
  row(
    'client_fork',
    'id_regressed',
    'proven_loss',
    'a sequence at or before the cursor',
    'integer ids starting again from 1',
    [LAB],
  ),
  row(
    'client_fork',
    'id_reused',
    'proven_loss',
    'the cursor itself, or an id already consumed',
    'a second reconnect after a fork',
    [LAB],
  ),
  row(
    'client_fork',
    'stream_changed',
    'proven_loss',
    'another stream key, or another format than the cursor’s',
    'a fresh stream with live events',
    [LAB],
  ),
  row(
    'client_fork',
    'cursor_dropped',
    'proven_loss',
    'the cursor dropped with a live process holding the stream, or skipped ids never consumed on a numbering learned dense (counted in forkwatch_client_resume_skipped_events)',
    'the fork lab’s silent fork; the integer-id case of issue 45 (7 skipped)',
    [LAB, CURSORLESS],
    true,
  ),
  row(
    'client_duplicate_events',
    WHOLE_FAMILY,
    'exposure',
    'an id delivered twice in the session: the log was not continued, what it lost is unknown',
    'a reconnect that returns to the first process after a fork',
    [LAB],
  ),
  row(
    'client_live_gaps',
    WHOLE_FAMILY,
    'exposure',
    'ids skipped on a live stream whose per-stream numbering was seen dense: events never received here, or a numbering that only looked dense',
    'a split brain behind a shared store: the resume was continuous, later events went to a process the stream no longer reads',
    ['test/client/global-counter-ids.test.ts'],
  ),
  row(
    'client_foreign_responses',
    WHOLE_FAMILY,
    'exposure',
    'a response to a request this client never sent: another session’s replay',
    'a store shared by sessions',
    ['test/client/foreign-responses.test.ts'],
  ),
  // Server resumes (server-resume.ts, core/replay-boundary.ts).
  row(
    'server_resume',
    'replayed',
    'proven_continuity',
    'the store knew the cursor and replayed after it (its word: a vouching store is caught by the client’s verdict)',
    'a resume on the process that holds the log',
    [SERVER],
  ),
  row(
    'server_resume',
    'unknown_cursor',
    'exposure',
    'the store does not know the cursor: the log is elsewhere or gone, and whether events were sent is not known here',
    'a resume routed to a process without the log',
    [SERVER],
  ),
  row(
    'server_resume',
    'ignored',
    'exposure',
    'no event store: the cursor was dropped and a fresh stream opened',
    'a server without an event store',
    [SERVER],
  ),
  row('server_resume', 'rejected', 'exposure', 'the server refused the resume (4xx)', 'a validating store', [SERVER]),
  row('server_resume', 'failed', 'exposure', 'the replay threw (5xx)', 'a store that throws for unknown cursors', [
    'test/server/web-standard-transport.test.ts',
  ]),
  row(
    'server_resume',
    'probe_rejected',
    'proven_continuity',
    'forkwatch probe’s never-issued cursor refused: no client’s events at stake',
    'the probe’s deliberate refusals',
    ['test/server/web-standard-transport.test.ts'],
  ),
  row(
    'server_resume',
    'cross_session',
    'proven_loss',
    'the replay sent events this process stored for another session',
    'one store shared by sessions',
    ['test/server/boundary-lab.test.ts'],
  ),
  row(
    'server_resume',
    'completed_stream',
    'proven_loss',
    'the cursor resolved to a request stream that had completed here: ids colliding across replicas',
    'per-replica counters behind a balancer',
    ['test/core/replay-boundary.test.ts'],
  ),
  // The delivery ledger (core/delivery-rules.ts): what reached a live stream.
  row(
    'server_undelivered',
    'stream_moved',
    'proven_loss',
    'stored while no stream listened here, and the session alive here past the window without coming back for them',
    'a resume that went elsewhere, a cursor-less reconnect (no replay can come)',
    [DELIVERY, CURSORLESS],
    true,
  ),
  row(
    'server_undelivered',
    'no_listener',
    'proven_loss',
    'standalone events of a session that never opened a GET here, alive past the window',
    'split-brain routing',
    [DELIVERY],
    true,
  ),
  row(
    'server_undelivered',
    'dropped',
    'proven_loss',
    'no event store and no stream: nowhere to go',
    'a store-less server',
    [DELIVERY],
    true,
  ),
  row(
    'server_undelivered',
    'abandoned',
    'exposure',
    'pending when the session closed, expired or was evicted: the client went away, or crashed',
    'a client that crashed',
    [DELIVERY],
    true,
  ),
  row(
    'server_undelivered',
    'in_flight',
    'exposure',
    'written live with no event store at most inflightMs before the client dropped the standalone connection: bytes in a proxy or socket die with it, and nothing can replay or vouch for them',
    'a store-less server behind a proxy that cuts streams',
    ['test/server/delivery-ledger.test.ts', 'test/core/delivery-ledger.test.ts', 'test/stacks/hono-mcp.test.ts'],
    true,
  ),
  row(
    'server_shared_unreplayed',
    'stream_moved',
    'proven_loss',
    'with a shared store, loss past the fleet balance: what replicas stored and did not replay, less what other replicas replayed that was not pending on them (the delivery SLI’s clamp_min)',
    'round-robin over a shared Redis store',
    ['alerts/tests/server-delivery-shared-store.yml'],
    true,
  ),
  row(
    'server_shared_unreplayed',
    'no_listener',
    'proven_loss',
    'as stream_moved, for standalone events of a session that never listened here',
    'round-robin over a shared Redis store',
    ['test/server/delivery-shared-store.test.ts'],
    true,
  ),
  // Fleet delivery marks (issue 49): the shared store's own record of which stored events no replica delivered.
  row(
    'server_fleet_undelivered',
    'fresh_stream',
    'proven_loss',
    'a mark in the shared store for an event no replica delivered, live or by a replay, claimed by one replica when a cursor-less GET of the session followed it: nothing can replay it any more',
    'round-robin over a shared Redis store (split brain)',
    ['test/core/fleet-delivery-rules.test.ts'],
    true,
  ),
  row(
    'server_fleet_undelivered',
    'session_deleted',
    'proven_loss',
    'a mark for an event no replica delivered, claimed when the client deleted the session: it left without it',
    'round-robin over a shared Redis store, the session ended by its client',
    ['test/core/fleet-delivery-rules.test.ts'],
    true,
  ),
  row(
    'server_fleet_undelivered',
    'overdue',
    'proven_loss',
    'a mark for an event no replica delivered, claimed a delivery window after it while the session kept talking: alive and never came back for it',
    'round-robin over a shared Redis store, a session that never reconnects its stream',
    ['test/core/fleet-delivery-rules.test.ts'],
    true,
  ),
  row(
    'server_replayed_unpending',
    WHOLE_FAMILY,
    'proven_continuity',
    'events a replay here sent that were pending on another replica: the other side of the fleet balance',
    'a resume on another replica of a shared store',
    ['test/server/delivery-shared-store.test.ts'],
  ),
  // Protocol 2026-07-28 (per-request): the server's exchanges.
  row(
    'server_exchange',
    'delivered',
    'proven_continuity',
    'the terminal response written to an open request',
    'a healthy exchange',
    [PER_REQUEST],
  ),
  row(
    'server_exchange',
    'closed_before_response',
    'exposure',
    'the request closed before any response: a cancel, a timeout or a dead client look the same',
    'a client that gave up',
    [PER_REQUEST],
  ),
  row(
    'server_exchange',
    'closed_mid_stream',
    'exposure',
    'the request closed mid-stream: loss only if the client asks again',
    'a cut stream',
    ['test/per-request/dual-era.test.ts'],
  ),
  row(
    'server_exchange',
    'unconfirmed',
    'exposure',
    'written behind a balancer declared to hide client closes: no evidence of a reader',
    'a balancer that hides closes',
    [HIDDEN],
  ),
  row(
    'server_late_message',
    'result',
    'exposure',
    'a result produced after its exchange closed: lost to a live client only if it asks again',
    'an app’s cancel, a client’s timeout',
    [PER_REQUEST],
  ),
  row('server_late_message', 'error', 'exposure', 'as result, for an error', 'as result', [PER_REQUEST]),
  row(
    'server_late_message',
    'notification',
    'exposure',
    'a notification after its exchange closed',
    'a long tool call cut',
    ['test/per-request/fleet.test.ts'],
  ),
  row(
    'server_probable_reissues',
    WHOLE_FAMILY,
    'proven_loss',
    'a like request after a broken exchange: the client lost the result and asked again',
    'a result lost behind a balancer',
    [HIDDEN],
    true,
  ),
  row(
    'server_reissues_after_honoured_cancel',
    WHOLE_FAMILY,
    'exposure',
    'a like request after a break whose handler stopped on the cancellation: an app that cancels and calls again looks the same',
    'issue 40',
    ['test/per-request/recall.test.ts'],
  ),
  row(
    'server_listen_publish',
    'listened',
    'proven_continuity',
    'a publish reached a listen stream here',
    'a healthy subscription',
    ['test/per-request/listen.test.ts'],
  ),
  row(
    'server_listen_publish',
    'no_listener',
    'exposure',
    'a publish no listen stream here heard: another replica may hold the listener',
    'listeners on another replica',
    ['test/per-request/listen.test.ts'],
  ),
  row(
    'server_orphaned_tasks',
    WHOLE_FAMILY,
    'proven_loss',
    'a task whose creating response never reached the client: nobody can poll it',
    'an exchange closed before its task’s response',
    ['test/per-request/tasks-and-streams.test.ts'],
    true,
  ),
  row(
    'server_task_miss',
    'expired',
    'exposure',
    'tasks/get for a task this process created and forgot',
    'a short task TTL',
    ['test/per-request/tasks-and-streams.test.ts'],
  ),
  row(
    'server_task_miss',
    'unknown',
    'exposure',
    'tasks/get for a task this process never created: misrouted or stale',
    'tasks behind a round-robin balancer',
    ['test/per-request/tasks-and-streams.test.ts'],
  ),
  // Protocol 2026-07-28: the client's exchanges.
  row('client_exchange', 'completed', 'proven_continuity', 'the terminal response arrived', 'a healthy exchange', [
    PER_REQUEST,
  ]),
  row(
    'client_exchange',
    'ended_early',
    'exposure',
    'the response ended before its terminal message: loss only if it is not re-issued',
    'a cut stream',
    [PER_REQUEST],
  ),
  row(
    'client_exchange',
    'broken',
    'exposure',
    'the response broke before its terminal message: loss only if it is not re-issued',
    'a reset connection',
    [PER_REQUEST],
  ),
  row(
    'client_exchange',
    'cancelled',
    'proven_continuity',
    'the app cancelled: it wanted nothing more',
    'an app’s abort',
    [PER_REQUEST],
  ),
  row(
    'client_exchange',
    'failed',
    'exposure',
    'no response at all: the request may or may not have run',
    'a refused connection',
    ['test/per-request/fleet.test.ts'],
  ),
  row(
    'client_reissue',
    'reissued',
    'exposure',
    'the app asked again and may have its result; the first run’s side effect is unknown',
    'an app that retries',
    [HIDDEN],
  ),
  row(
    'client_reissue',
    'not_reissued',
    'proven_loss',
    'a broken exchange nobody asked for again within the window: the app never got its result',
    'results lost behind a balancer (ForkwatchClientResultsLost)',
    [HIDDEN],
  ),
  row(
    'client_listen_stream',
    'closed',
    'proven_continuity',
    'the server closed the listen stream gracefully',
    'a server’s shutdown',
    ['test/per-request/listen.test.ts'],
  ),
  row(
    'client_listen_stream',
    'dropped',
    'exposure',
    'the listen stream dropped: notifications published in the gap are lost, how many is unknown',
    'a cut connection',
    ['test/per-request/listen.test.ts'],
  ),
  row(
    'client_listen_stream',
    'cancelled',
    'proven_continuity',
    'the app cancelled its subscription',
    'an app’s unsubscribe',
    ['test/per-request/listen.test.ts'],
  ),
  // Revived sessions and reconnect storms (issue 41): state gone, loss unknown.
  row(
    'client_revived',
    'new_session_id',
    'exposure',
    'a response with another session id than the one the session held',
    'a restart that lost sessions',
    [REVIVED],
  ),
  row(
    'client_revived',
    'not_initialized',
    'exposure',
    'a request after the session worked answered "initialize first"',
    'a restart that lost sessions',
    [REVIVED],
  ),
  row(
    'server_revived',
    'restored',
    'exposure',
    'an id this process never held, hydrated with an event store that can replay it',
    'hydration over a shared store',
    [REVIVED],
  ),
  row(
    'server_revived',
    'empty',
    'exposure',
    'an id this process never held, answered as a fresh session (a stateful transport only: a stateless one has no session to revive)',
    'hydration without state; not a stateless server (issue 45)',
    [REVIVED, 'test/revived/stateless.test.ts'],
  ),
  row(
    'client_empty_reconnect',
    'resume',
    'exposure',
    'a reconnect with Last-Event-ID after a GET that ended empty',
    'a reconnect storm',
    ['test/revived/reconnect-storms.test.ts'],
  ),
  row(
    'client_empty_reconnect',
    'dropped_after_empty',
    'exposure',
    'a reconnect without the cursor after an empty resume (typescript-sdk #2499)',
    'a reconnect storm',
    ['test/revived/reconnect-storms.test.ts'],
  ),
  row(
    'client_empty_reconnect',
    'fresh',
    'exposure',
    'a reconnect that never held a cursor after an empty GET',
    'a reconnect storm',
    ['test/revived/reconnect-storms.test.ts'],
  ),
  row(
    'server_empty_repeat_gets',
    WHOLE_FAMILY,
    'exposure',
    'a GET soon after a GET of the session answered 200 with nothing',
    'a reconnect storm',
    ['test/revived/reconnect-storms.test.ts'],
  ),
];

const INDEX = new Map<string, EvidenceRow>(EVIDENCE_RULES.map(r => [`${r.subject}\u0000${r.value}`, r]));

/** The row of an observation, or undefined for a value the table does not know. */
export function evidenceRow(subject: EvidenceSubject, value: string = WHOLE_FAMILY): EvidenceRow | undefined {
  return INDEX.get(`${subject}\u0000${value}`);
}

/** What an observation proves; a value the table does not know is exposure (never dropped, never a page). */
export function evidenceOf(subject: EvidenceSubject, value: string = WHOLE_FAMILY): Evidence {
  return evidenceRow(subject, value)?.evidence ?? 'exposure';
}

/** The values of a subject with this evidence, in the table's order. */
export function valuesWith(subject: EvidenceSubject, evidence: Evidence): string[] {
  return EVIDENCE_RULES.filter(r => r.subject === subject && r.evidence === evidence).map(r => r.value);
}
