/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The one place that owns forkwatch's metric, label, span and event names.
 *
 * The Prometheus names here are a contract: dashboards, alerts and users' queries use them. Tests check the
 * OpenTelemetry exporter's scrape, the prom-client bridge, the dashboards and the rules against this module.
 */
import { type EvidenceSubject, WHOLE_FAMILY, valuesWith } from '../core/evidence';
import type { BoundaryOutcome } from '../core/replay-boundary';
import { FORK_REASONS, RESUME_OUTCOMES } from '../core/verdict';
import { PACKAGE_VERSION } from './version';

export const INSTRUMENTATION_SCOPE = 'forkwatch';

/** The product token of `forkwatch probe`'s User-Agent (`forkwatch-probe/<version>`). */
export const PROBE_USER_AGENT = 'forkwatch-probe';

/** True for a request made by `forkwatch probe` (or its exporter). */
export function isProbeUserAgent(userAgent: string | undefined): boolean {
  return userAgent?.startsWith(`${PROBE_USER_AGENT}/`) ?? false;
}

export const CLIENT_TRANSPORTS = ['streamable_http', 'sse'] as const;
export type ClientTransportLabel = (typeof CLIENT_TRANSPORTS)[number];

export const SERVER_TRANSPORTS = ['streamable_http'] as const;
export type ServerTransportLabel = (typeof SERVER_TRANSPORTS)[number];

/**
 * `probe_rejected`: a resume from `forkwatch probe` (User-Agent PROBE_USER_AGENT) that was refused or served
 * without the session log. The probe sends a never-issued cursor on purpose and retries its own 409s, so these
 * are counted apart from real clients' `rejected` and `unknown_cursor` and never reach an alert.
 *
 * `cross_session` and `completed_stream` are 2xx replays that crossed a boundary (src/core/replay-boundary.ts): the
 * replay sent events this process stored for another session (a data leak, it pages), or the cursor resolved to a
 * request stream of the session that had already completed here (ids colliding across replicas: a fork).
 */
export const SERVER_RESUME_OUTCOMES = [
  'replayed',
  'unknown_cursor',
  'ignored',
  'rejected',
  'failed',
  'probe_rejected',
  'cross_session',
  'completed_stream',
] as const satisfies readonly (string | BoundaryOutcome)[];
export type ServerResumeOutcome = (typeof SERVER_RESUME_OUTCOMES)[number];
/** The boundary outcomes, as the core names them: a compile-time check that the two lists agree. */
export const SERVER_BOUNDARY_OUTCOMES = [
  'cross_session',
  'completed_stream',
] as const satisfies readonly BoundaryOutcome[] satisfies readonly ServerResumeOutcome[];

/**
 * Why an event a server transport stored (or wrote) never reached a client from this process. Loss reasons page
 * through the server delivery SLO; `abandoned` (the client went away for good) and `in_flight` (written with no
 * event store just before the client's connection dropped: read or not, nobody can tell) never do.
 */
export const SERVER_UNDELIVERED_REASONS = ['stream_moved', 'no_listener', 'dropped', 'abandoned', 'in_flight'] as const;
export type ServerUndeliveredReason = (typeof SERVER_UNDELIVERED_REASONS)[number];
/** The undelivered reasons that are loss to a live client (the server delivery SLO's bad events). */
export const SERVER_UNDELIVERED_LOSS_REASONS = valuesWith(
  'server_undelivered',
  'proven_loss',
) as readonly ServerUndeliveredReason[];

/**
 * Protocol 2026-07-28 (per-request MCP): how a server exchange ended. `unconfirmed` (issue 40): written to a request
 * still open, behind a balancer declared to hide client closes (`perRequest.balancerHidesCloses`): no evidence of a
 * reader either way.
 */
export const SERVER_EXCHANGE_OUTCOMES = [
  'delivered',
  'closed_before_response',
  'closed_mid_stream',
  'unconfirmed',
] as const;
/** Messages a handler produced for an exchange that had already closed (the SDK drops them silently). */
export const SERVER_LATE_MESSAGE_KINDS = ['result', 'error', 'notification'] as const;
/** The late kinds that are terminal responses lost (the delivered-results SLO's bad events). */
export const SERVER_LATE_TERMINAL_KINDS = ['result', 'error'] as const;
/** What a probable re-issue targets: a tool not annotated idempotent is the duplicate-execution risk. */
export const REISSUE_IDEMPOTENCY = ['not_idempotent', 'idempotent', 'not_a_tool'] as const;
/** A publish on the server event bus: reached at least one listen stream on this process, or none. */
export const LISTEN_PUBLISH_OUTCOMES = ['listened', 'no_listener'] as const;
export const TASK_MISS_REASONS = ['expired', 'unknown'] as const;
// --- issue 40 (server side, pr-server): the delivered-results SLO's events ---
/**
 * The exchanges whose terminal response was written (the delivered-results SLO's good events and the rest of its
 * total). Its bad events are `forkwatch_server_probable_reissues_total` (every idempotency): an exchange the client
 * lost and asked for again. A late result with no re-issue is not a bad event: the 2.x client cancels by closing the
 * request's stream, so an app's cancel, a client's timeout and a client that died look like a break to the server
 * and lose nothing a live client still wanted.
 */
export const SERVER_EXCHANGE_WRITTEN_OUTCOMES = [
  'delivered',
  'unconfirmed',
] as const satisfies readonly (typeof SERVER_EXCHANGE_OUTCOMES)[number][];
// --- end issue 40 (server side) ---
export const CLIENT_EXCHANGE_OUTCOMES = ['completed', 'ended_early', 'broken', 'cancelled', 'failed'] as const;
export const CLIENT_REISSUE_OUTCOMES = ['reissued', 'not_reissued'] as const;
export const LISTEN_STREAM_OUTCOMES = ['closed', 'dropped', 'cancelled'] as const;
/**
 * With a shared event store (`sharedEventStore`), the loss reasons a process cannot judge alone: another replica may
 * replay what this one stored. They count in forkwatch_server_shared_unreplayed_events_total, and the rules weigh
 * them against the events replicas replayed that were not pending on them (the fleet balance).
 */
export const SERVER_SHARED_UNREPLAYED_REASONS = [
  'stream_moved',
  'no_listener',
] as const satisfies readonly ServerUndeliveredReason[];
export type ServerSharedUnreplayedReason = (typeof SERVER_SHARED_UNREPLAYED_REASONS)[number];

// --- issue 49 ---
/**
 * With fleet delivery marks (`fleetDelivery`: the replicas' shared store keeps which stored events no replica
 * delivered), why the fleet counted an event as never delivered. Each event is claimed by exactly one replica, so the
 * sum over replicas counts it once (core/fleet-delivery-rules.ts):
 * `session_deleted`: the client deleted the session with it undelivered; `fresh_stream`: the client opened a new
 * standalone stream without Last-Event-ID, which no replay can reach back from; `overdue`: the session was alive in
 * the fleet a delivery window after it was stored, and no replica had delivered it.
 */
export const SERVER_FLEET_UNDELIVERED_REASONS = ['session_deleted', 'fresh_stream', 'overdue'] as const;
export type ServerFleetUndeliveredReason = (typeof SERVER_FLEET_UNDELIVERED_REASONS)[number];
// --- end issue 49 ---

/**
 * Revived sessions and reconnect storms (issue 41). A revived session is one a server answered as live after losing
 * it: the client sees it answer as a new session (`new_session_id`: a response carried another Mcp-Session-Id than the
 * one the session held; `not_initialized`: a request after the session worked was answered "initialize first"). The
 * server counts a request for a session id this process never held that the app's hydration accepted, by whether the
 * hydrated session had state to restore (`restored`: an event store, and a first resume that replayed at least one
 * event of the session) or not (`empty`: a fresh session under an old id, or a replay of 0 events, which proves
 * nothing restored).
 */
export const CLIENT_REVIVED_REASONS = ['new_session_id', 'not_initialized'] as const;
export type ClientRevivedReason = (typeof CLIENT_REVIVED_REASONS)[number];
export const SERVER_REVIVED_STATES = ['restored', 'empty'] as const;
export type ServerRevivedState = (typeof SERVER_REVIVED_STATES)[number];
/**
 * The kind of a reconnect that follows a GET stream that ended with no event, soon after it opened: `resume` (the GET
 * carried Last-Event-ID), `dropped_after_empty` (none, though the empty stream was itself a resume with a cursor: the
 * SDK's reconnect after an empty 200, typescript-sdk #2499), `fresh` (no cursor was ever held).
 */
export const EMPTY_RECONNECT_KINDS = ['resume', 'dropped_after_empty', 'fresh'] as const;
export type EmptyReconnectKind = (typeof EMPTY_RECONNECT_KINDS)[number];
/** Lengths of runs of empty reconnects of one session (1 = a single empty answer). */
export const EMPTY_STREAK_BUCKETS = [1, 2, 3, 5, 10, 25, 50, 100, 250, 1000, 10000] as const;

/** Metric attribute (Prometheus label) keys. Plain words, so the exporter keeps them as written. */
export const LABEL = {
  transport: 'transport',
  outcome: 'outcome',
  reason: 'reason',
  kind: 'kind',
  idempotency: 'idempotency',
  state: 'state',
} as const;

export type MetricKind = 'counter' | 'histogram' | 'gauge';

export interface MetricSpec {
  /** OpenTelemetry instrument name. */
  readonly otelName: string;
  /** Prometheus metric family name, as scraped (counters end in `_total`). */
  readonly prometheusName: string;
  readonly kind: MetricKind;
  readonly unit: string;
  readonly description: string;
  /** Every label with every value it can take: all combinations are created at 0 on start. */
  readonly labels: Readonly<Record<string, readonly string[]>>;
  readonly buckets?: readonly number[];
  /**
   * Counted once per event on a server's hot path: tallied in plain numbers and reported by an observable counter
   * at each collection, because a synchronous add() hashes its attributes every time (about 1 µs). Same family,
   * type, labels and zeros as any other counter.
   */
  readonly tallied?: boolean;
}

/**
 * The instrumentation info metric's labels. One series per SDK class forkwatch patched, by the route that found it
 * (`otel_hook`: @opentelemetry/instrumentation's module hooks; `cjs_hook`, `esm_hook`: forkwatch's own file hooks for
 * SDK 1.x; `esm_dependents`: 2.x packages behind an ESM-only dependent; `require_cache`: an SDK loaded before
 * forkwatch; `manual`: manuallyInstrument()); the wire observer of fetch is `sdk_class="fetch"`, `route="wire"`, and
 * is 1 only once it judged an MCP exchange (installed in every process, it covers nothing until MCP traffic passes
 * through it). A `none` series is 1 while nothing is patched and the wire observer judged nothing: forkwatch is
 * loaded but has judged nothing here. `sdk_class="unjudged"` (`route="http_server"`) is 1 while this process's HTTP
 * server answered MCP requests and no MCP server transport class is patched here: MCP traffic forkwatch cannot judge.
 */
export const PATCH_ROUTES = [
  'otel_hook',
  'cjs_hook',
  'esm_hook',
  'esm_dependents',
  'require_cache',
  'manual',
  'wire',
] as const;
export const INFO_NONE = 'none';
/**
 * The stacks with a server transport of their own (no MCP SDK class serves their HTTP), each a folder of
 * src/server/stacks/: the package and the classes instrumentation_info names them by. Their rows in
 * lifecycle/targets.ts STACK_PACKAGES take the classes to patch from here.
 */
export const STACK_CLASSES = {
  '@tmcp/transport-http': ['HttpTransport'],
  '@hono/mcp': ['StreamableHTTPTransport'],
} as const satisfies Record<string, readonly string[]>;
export type StackPackageName = keyof typeof STACK_CLASSES;
const STACK_PACKAGE_NAMES = Object.keys(STACK_CLASSES) as StackPackageName[];
const STACK_CLASS_NAMES: readonly string[] = Object.values(STACK_CLASSES).flat();
export const INFO_SDK_PACKAGES: readonly string[] = [
  '@modelcontextprotocol/sdk',
  '@modelcontextprotocol/client',
  '@modelcontextprotocol/server',
  'manual',
  'fetch',
  INFO_NONE,
  ...STACK_PACKAGE_NAMES,
];
export const INFO_SDK_CLASSES: readonly string[] = [
  'StreamableHTTPClientTransport',
  'SSEClientTransport',
  'StreamableHTTPServerTransport',
  'WebStandardStreamableHTTPServerTransport',
  'PerRequestHTTPServerTransport',
  'Server',
  'McpServer',
  'InMemoryServerEventBus',
  'fetch',
  INFO_NONE,
  ...STACK_CLASS_NAMES,
  'unjudged',
];
/** The info series of MCP traffic forkwatch cannot judge: its sdk_class, and its route (node:http's server). */
export const INFO_UNJUDGED = { sdk_class: 'unjudged', route: 'http_server' } as const;
/** Patched classes that judge a server's MCP traffic: while one is patched, server traffic is not `unjudged`. */
export const INFO_SERVER_TRANSPORT_CLASSES: readonly string[] = [
  'StreamableHTTPServerTransport',
  'WebStandardStreamableHTTPServerTransport',
  'PerRequestHTTPServerTransport',
  ...STACK_CLASS_NAMES,
];

/** Time from losing a stream to the first frame of its resume: 10 ms to 10 min. */
export const GAP_SECONDS_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600] as const;
/** Event counts (skipped or replayed): 0 is its own bucket, since 0 means contiguous. */
export const EVENT_COUNT_BUCKETS = [0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

export const METRICS = {
  clientResumes: {
    otelName: 'forkwatch.client.resumes',
    prometheusName: 'forkwatch_client_resumes_total',
    kind: 'counter',
    unit: '{resume}',
    description: 'Resume attempts of MCP SSE streams (GET with Last-Event-ID), by outcome.',
    labels: { transport: CLIENT_TRANSPORTS, outcome: RESUME_OUTCOMES },
  },
  clientForks: {
    otelName: 'forkwatch.client.forks',
    prometheusName: 'forkwatch_client_forks_total',
    kind: 'counter',
    unit: '{fork}',
    description: 'Resumed MCP streams whose first frame did not continue the session event log, by reason.',
    labels: { transport: CLIENT_TRANSPORTS, reason: FORK_REASONS },
  },
  clientDuplicateEvents: {
    otelName: 'forkwatch.client.duplicate_events',
    prometheusName: 'forkwatch_client_duplicate_events_total',
    kind: 'counter',
    unit: '{event}',
    description: 'SSE frames whose event id had already been consumed in the session.',
    labels: { transport: CLIENT_TRANSPORTS },
  },
  clientLiveGaps: {
    otelName: 'forkwatch.client.live_gaps',
    prometheusName: 'forkwatch_client_live_gaps_total',
    kind: 'counter',
    unit: '{gap}',
    description:
      'Sessions whose live SSE stream skipped event ids of a per-stream sequence it had seen dense (events sent to a process the stream no longer reads, or a numbering that only looked dense).',
    labels: { transport: CLIENT_TRANSPORTS },
  },
  clientForeignResponses: {
    otelName: 'forkwatch.client.foreign_responses',
    prometheusName: 'forkwatch_client_foreign_responses_total',
    kind: 'counter',
    unit: '{response}',
    description:
      'JSON-RPC responses received for a request this client never sent or already got an answer to (a replay from another stream or session).',
    labels: { transport: CLIENT_TRANSPORTS },
  },
  clientResumeGapSeconds: {
    otelName: 'forkwatch.client.resume.gap_seconds',
    prometheusName: 'forkwatch_client_resume_gap_seconds',
    kind: 'histogram',
    // The name already carries the unit, so a Collector that appends unit suffixes produces the same name.
    unit: 's',
    description: 'Time from losing an MCP SSE stream to the first frame of the resumed stream.',
    labels: {},
    buckets: GAP_SECONDS_BUCKETS,
  },
  clientResumeSkippedEvents: {
    otelName: 'forkwatch.client.resume.skipped_events',
    prometheusName: 'forkwatch_client_resume_skipped_events',
    kind: 'histogram',
    unit: '{event}',
    description: 'Event ids skipped between the resume cursor and the first frame (dense sequences; 0 = contiguous).',
    labels: {},
    buckets: EVENT_COUNT_BUCKETS,
  },
  serverResumes: {
    otelName: 'forkwatch.server.resumes',
    prometheusName: 'forkwatch_server_resumes_total',
    kind: 'counter',
    unit: '{resume}',
    description: 'GET requests carrying Last-Event-ID served by this process, by outcome.',
    labels: { transport: SERVER_TRANSPORTS, outcome: SERVER_RESUME_OUTCOMES },
  },
  serverResumeGapEvents: {
    otelName: 'forkwatch.server.resume.gap_events',
    prometheusName: 'forkwatch_server_resume_gap_events',
    kind: 'histogram',
    unit: '{event}',
    description: 'Events replayed for a resume: the exact size of the gap.',
    labels: {},
    buckets: EVENT_COUNT_BUCKETS,
  },
  serverEvents: {
    otelName: 'forkwatch.server.events',
    prometheusName: 'forkwatch_server_events_total',
    kind: 'counter',
    unit: '{event}',
    description: 'Events the server stored in its event store or sent on an SSE stream.',
    labels: { transport: SERVER_TRANSPORTS },
    tallied: true,
  },
  serverUndeliveredEvents: {
    otelName: 'forkwatch.server.undelivered_events',
    prometheusName: 'forkwatch_server_undelivered_events_total',
    kind: 'counter',
    unit: '{event}',
    description:
      'Events this process stored or wrote for a session stream that never reached a client from this process, by reason.',
    labels: { transport: SERVER_TRANSPORTS, reason: SERVER_UNDELIVERED_REASONS },
  },
  serverExchanges: {
    otelName: 'forkwatch.server.exchanges',
    prometheusName: 'forkwatch_server_exchanges_total',
    kind: 'counter',
    unit: '{exchange}',
    description:
      'Per-request MCP exchanges (protocol 2026-07-28) served by this process, by how they ended: with their terminal response (delivered; unconfirmed behind a balancer declared to hide client closes), or closed before it (before any HTTP response: the 499s; or mid-stream).',
    labels: { outcome: SERVER_EXCHANGE_OUTCOMES },
    tallied: true,
  },
  serverLateMessages: {
    otelName: 'forkwatch.server.late_messages',
    prometheusName: 'forkwatch_server_late_messages_total',
    kind: 'counter',
    unit: '{message}',
    description:
      'Results, errors and notifications a handler produced after its per-request exchange had closed: dropped by the SDK without an error.',
    labels: { kind: SERVER_LATE_MESSAGE_KINDS },
  },
  serverProbableReissues: {
    otelName: 'forkwatch.server.probable_reissues',
    prometheusName: 'forkwatch_server_probable_reissues_total',
    kind: 'counter',
    unit: '{request}',
    description:
      'Requests with the same principal, method, name and argument digest as a broken exchange within the re-issue window, whether they arrived before or after the server heard of the break (MRTR retries excluded), by the idempotency the server declared.',
    labels: { idempotency: REISSUE_IDEMPOTENCY },
  },
  // issue 40 (pr-server): a like request after a break whose handler had honoured the cancellation.
  serverReissuesAfterHonouredCancel: {
    otelName: 'forkwatch.server.reissues_after_honoured_cancel',
    prometheusName: 'forkwatch_server_reissues_after_honoured_cancel_total',
    kind: 'counter',
    unit: '{request}',
    description:
      'Requests with the same principal, method, name and argument digest as a broken exchange within the re-issue window, after its handler had stopped on the cancellation: apart from the probable re-issues because an app that cancels and calls again looks the same; whether the first run committed its side effect before it stopped is unknown to the server.',
    labels: { idempotency: REISSUE_IDEMPOTENCY },
  },
  serverListenPublishes: {
    otelName: 'forkwatch.server.listen_publishes',
    prometheusName: 'forkwatch_server_listen_publishes_total',
    kind: 'counter',
    unit: '{event}',
    description:
      'Events published on the in-memory server event bus, by whether any listen stream on this process was subscribed.',
    labels: { outcome: LISTEN_PUBLISH_OUTCOMES },
  },
  serverOrphanedTasks: {
    otelName: 'forkwatch.server.orphaned_tasks',
    prometheusName: 'forkwatch_server_orphaned_tasks_total',
    kind: 'counter',
    unit: '{task}',
    description: 'Tasks (SEP-2663) whose creating response never reached the client: the exchange closed before it.',
    labels: {},
  },
  serverTaskMisses: {
    otelName: 'forkwatch.server.task_misses',
    prometheusName: 'forkwatch_server_task_misses_total',
    kind: 'counter',
    unit: '{request}',
    description:
      'tasks/get answered "not found": for a task this process created (expired) or one it never created (unknown: misrouted or stale).',
    labels: { reason: TASK_MISS_REASONS },
  },
  clientExchanges: {
    otelName: 'forkwatch.client.exchanges',
    prometheusName: 'forkwatch_client_exchanges_total',
    kind: 'counter',
    unit: '{exchange}',
    description:
      'Per-request MCP exchanges (protocol 2026-07-28) sent by this process, by how their response ended: with the terminal response, ended or broken before it, cancelled by the app, or failed before a response.',
    labels: { outcome: CLIENT_EXCHANGE_OUTCOMES },
  },
  clientReissues: {
    otelName: 'forkwatch.client.reissues',
    prometheusName: 'forkwatch_client_reissues_total',
    kind: 'counter',
    unit: '{exchange}',
    description:
      'Exchanges that ended or broke before their terminal response, by whether the app re-issued them (same endpoint, method, name and arguments) within the re-issue window.',
    labels: { outcome: CLIENT_REISSUE_OUTCOMES },
  },
  clientReissueDelaySeconds: {
    otelName: 'forkwatch.client.reissue.delay_seconds',
    prometheusName: 'forkwatch_client_reissue_delay_seconds',
    kind: 'histogram',
    unit: 's',
    description: 'Time from a broken exchange to the app re-issuing it.',
    labels: {},
    buckets: GAP_SECONDS_BUCKETS,
  },
  clientListenStreams: {
    otelName: 'forkwatch.client.listen_streams',
    prometheusName: 'forkwatch_client_listen_streams_total',
    kind: 'counter',
    unit: '{stream}',
    description:
      'subscriptions/listen streams that ended: closed by the server gracefully, dropped, or cancelled by the app.',
    labels: { outcome: LISTEN_STREAM_OUTCOMES },
  },
  clientListenGapSeconds: {
    otelName: 'forkwatch.client.listen.gap_seconds',
    prometheusName: 'forkwatch_client_listen_gap_seconds',
    kind: 'histogram',
    unit: 's',
    description:
      'Time from a dropped listen stream to the next acknowledgement of the same subscription: notifications published in it are lost.',
    labels: {},
    buckets: GAP_SECONDS_BUCKETS,
  },
  instrumentationInfo: {
    otelName: 'forkwatch.instrumentation.info',
    prometheusName: 'forkwatch_instrumentation_info',
    kind: 'gauge',
    unit: '',
    description:
      'forkwatch is loaded: 1 for each MCP SDK class it patched (0 once removed), by the route that found it, and ' +
      'for its fetch observer once it judged an MCP exchange; sdk_class="none" is 1 while there is neither ' +
      '(loaded, but judging nothing); sdk_class="unjudged" is 1 while the HTTP server answers MCP requests and no ' +
      'MCP server transport is patched (MCP traffic forkwatch cannot judge).',
    labels: {
      version: [PACKAGE_VERSION],
      sdk_package: INFO_SDK_PACKAGES,
      sdk_class: INFO_SDK_CLASSES,
      route: [...PATCH_ROUTES, INFO_NONE, INFO_UNJUDGED.route],
    },
  },
  serverSharedUnreplayedEvents: {
    otelName: 'forkwatch.server.shared_unreplayed_events',
    prometheusName: 'forkwatch_server_shared_unreplayed_events_total',
    kind: 'counter',
    unit: '{event}',
    description:
      'With a shared event store: events this process stored while their session stream had no connection here and that no resume here replayed in time; another replica may have replayed them, so the fleet balance decides, by reason.',
    labels: { transport: SERVER_TRANSPORTS, reason: SERVER_SHARED_UNREPLAYED_REASONS },
  },
  serverReplayedUnpendingEvents: {
    otelName: 'forkwatch.server.replayed_unpending_events',
    prometheusName: 'forkwatch_server_replayed_unpending_events_total',
    kind: 'counter',
    unit: '{event}',
    description:
      'Events a resume on this process replayed that were not pending here: stored by another replica in a shared event store, or re-sent after a live write.',
    labels: { transport: SERVER_TRANSPORTS },
  },
  // --- issue 49 ---
  serverFleetUndeliveredEvents: {
    otelName: 'forkwatch.server.fleet_undelivered_events',
    prometheusName: 'forkwatch_server_fleet_undelivered_events_total',
    kind: 'counter',
    unit: '{event}',
    description:
      'With fleet delivery marks (fleetDelivery): events stored in the shared store that no replica delivered, live or by a replay, claimed by exactly one replica (summed over replicas, each event counts once), by reason.',
    labels: { transport: SERVER_TRANSPORTS, reason: SERVER_FLEET_UNDELIVERED_REASONS },
  },
  // --- end issue 49 ---
  clientRevivedSessions: {
    otelName: 'forkwatch.client.revived_sessions',
    prometheusName: 'forkwatch_client_revived_sessions_total',
    kind: 'counter',
    unit: '{session}',
    description:
      'Sessions the server answered as a new one after they had worked (a new Mcp-Session-Id, or "not initialized"): its state on the server is gone, by reason.',
    labels: { transport: CLIENT_TRANSPORTS, reason: CLIENT_REVIVED_REASONS },
  },
  serverRevivedSessions: {
    otelName: 'forkwatch.server.revived_sessions',
    prometheusName: 'forkwatch_server_revived_sessions_total',
    kind: 'counter',
    unit: '{session}',
    description:
      "Session ids this process never held that it answered as a live session instead of 404 (the app's hydration, or a transport such as tmcp's that serves any id), counted once per id, by whether it had state to restore.",
    labels: { state: SERVER_REVIVED_STATES },
  },
  clientEmptyReconnects: {
    otelName: 'forkwatch.client.empty_reconnects',
    prometheusName: 'forkwatch_client_empty_reconnects_total',
    kind: 'counter',
    unit: '{reconnect}',
    description:
      'Reconnects of a GET stream that ended with no event soon after it opened (an empty answer), by whether the reconnect carried Last-Event-ID: at about one a second, a reconnect storm.',
    labels: { transport: CLIENT_TRANSPORTS, kind: EMPTY_RECONNECT_KINDS },
  },
  clientEmptyReconnectStreak: {
    otelName: 'forkwatch.client.empty_reconnect.streak',
    prometheusName: 'forkwatch_client_empty_reconnect_streak',
    kind: 'histogram',
    unit: '{reconnect}',
    description: 'Empty reconnects in a row of one session, recorded when a stream of the session delivers again.',
    labels: {},
    buckets: EMPTY_STREAK_BUCKETS,
  },
  serverEmptyRepeatGets: {
    otelName: 'forkwatch.server.empty_repeat_gets',
    prometheusName: 'forkwatch_server_empty_repeat_gets_total',
    kind: 'counter',
    unit: '{request}',
    description:
      "GETs of a session that came soon after the session's previous GET was answered 200 and delivered nothing: the answers of a reconnect storm.",
    labels: { transport: SERVER_TRANSPORTS },
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricKey = keyof typeof METRICS;
export const METRIC_SPECS: readonly MetricSpec[] = Object.values(METRICS);

/** Every label combination of a metric, for initialising counters at 0. */
export function labelCombinations(spec: MetricSpec): Record<string, string>[] {
  let combos: Record<string, string>[] = [{}];
  for (const [key, values] of Object.entries(spec.labels)) {
    combos = combos.flatMap(combo => values.map(value => ({ ...combo, [key]: value })));
  }
  return combos;
}

/** Span names. */
export const SPAN = {
  clientResume: 'forkwatch.client.resume',
  serverResume: 'forkwatch.server.resume',
} as const;

/** Span event names. */
export const SPAN_EVENT = {
  resumeCursor: 'forkwatch.resume.cursor',
  resumeFirstFrame: 'forkwatch.resume.first_frame',
  replayDone: 'forkwatch.replay.done',
} as const;

/** Span and span-event attribute keys. */
export const ATTR = {
  // From the MCP semantic conventions.
  mcpSessionId: 'mcp.session.id',
  mcpProtocolVersion: 'mcp.protocol.version',
  httpStatusCode: 'http.response.status_code',
  errorType: 'error.type',
  // forkwatch's own.
  sessionHash: 'forkwatch.session.hash',
  transport: 'forkwatch.transport',
  cursor: 'forkwatch.resume.cursor',
  lastConsumedId: 'forkwatch.resume.last_consumed_id',
  attempt: 'forkwatch.resume.attempt',
  cursorHeld: 'forkwatch.resume.cursor_held',
  outcome: 'forkwatch.resume.outcome',
  verdict: 'forkwatch.resume.verdict',
  reason: 'forkwatch.resume.reason',
  firstEventId: 'forkwatch.resume.first_event_id',
  timeToFirstFrameMs: 'forkwatch.resume.time_to_first_frame_ms',
  gapSeconds: 'forkwatch.resume.gap_seconds',
  skippedEvents: 'forkwatch.resume.skipped_events',
  continuityVerified: 'forkwatch.continuity.verified',
  codec: 'forkwatch.codec',
  clockRegressed: 'forkwatch.continuity.clock_regressed',
  commentsBeforeFirstFrame: 'forkwatch.resume.comments_before_first_frame',
  eventStore: 'forkwatch.server.event_store',
  replayedEvents: 'forkwatch.replay.events',
  replayStreamId: 'forkwatch.replay.stream_id',
  serverOutcome: 'forkwatch.replay.outcome',
  /** The event store object is used by several sessions of this process: it cannot tell their streams apart. */
  storeShared: 'forkwatch.server.store_shared',
  /** Events of a cross_session replay that this process stored for another session. */
  foreignEvents: 'forkwatch.replay.foreign_events',
  /** The other session of a cross_session replay: hashed like forkwatch.session.hash; raw only when opted in. */
  foreignSessionHash: 'forkwatch.replay.foreign_session.hash',
  foreignSessionId: 'forkwatch.replay.foreign_session.id',
  /** What the resume proves (core/evidence.ts): proven_loss, proven_continuity or exposure. */
  evidence: 'forkwatch.evidence',
} as const;

// --- issue 45 evidence ---
/**
 * Where each subject of the evidence table (core/evidence.ts) is counted: its metric family and the label whose
 * values are the table's rows (none: the whole family is one row). test/core/evidence.test.ts checks that every
 * value of every label here has exactly one row; the pack reads loss and exposure series from here.
 */
export interface EvidenceFamily {
  readonly metric: MetricKey;
  readonly label: string | undefined;
}
export const EVIDENCE_FAMILIES: Readonly<Record<EvidenceSubject, EvidenceFamily>> = {
  client_resume: { metric: 'clientResumes', label: LABEL.outcome },
  client_fork: { metric: 'clientForks', label: LABEL.reason },
  client_duplicate_events: { metric: 'clientDuplicateEvents', label: undefined },
  client_live_gaps: { metric: 'clientLiveGaps', label: undefined },
  client_foreign_responses: { metric: 'clientForeignResponses', label: undefined },
  client_exchange: { metric: 'clientExchanges', label: LABEL.outcome },
  client_reissue: { metric: 'clientReissues', label: LABEL.outcome },
  client_listen_stream: { metric: 'clientListenStreams', label: LABEL.outcome },
  client_revived: { metric: 'clientRevivedSessions', label: LABEL.reason },
  client_empty_reconnect: { metric: 'clientEmptyReconnects', label: LABEL.kind },
  server_resume: { metric: 'serverResumes', label: LABEL.outcome },
  server_undelivered: { metric: 'serverUndeliveredEvents', label: LABEL.reason },
  server_shared_unreplayed: { metric: 'serverSharedUnreplayedEvents', label: LABEL.reason },
  server_fleet_undelivered: { metric: 'serverFleetUndeliveredEvents', label: LABEL.reason },
  server_replayed_unpending: { metric: 'serverReplayedUnpendingEvents', label: undefined },
  server_exchange: { metric: 'serverExchanges', label: LABEL.outcome },
  server_late_message: { metric: 'serverLateMessages', label: LABEL.kind },
  server_probable_reissues: { metric: 'serverProbableReissues', label: undefined },
  server_reissues_after_honoured_cancel: { metric: 'serverReissuesAfterHonouredCancel', label: undefined },
  server_listen_publish: { metric: 'serverListenPublishes', label: LABEL.outcome },
  server_orphaned_tasks: { metric: 'serverOrphanedTasks', label: undefined },
  server_task_miss: { metric: 'serverTaskMisses', label: LABEL.reason },
  server_revived: { metric: 'serverRevivedSessions', label: LABEL.state },
  server_empty_repeat_gets: { metric: 'serverEmptyRepeatGets', label: undefined },
};

/** One evidence series: a family and, for a labelled subject, one value of its label. */
export interface EvidenceSeries {
  readonly subject: EvidenceSubject;
  readonly prometheusName: string;
  readonly label: string | undefined;
  readonly value: string;
}

/** Every series of the table with this evidence, as Prometheus names them. */
export function evidenceSeries(evidence: 'proven_loss' | 'proven_continuity' | 'exposure'): EvidenceSeries[] {
  const series: EvidenceSeries[] = [];
  for (const [subject, family] of Object.entries(EVIDENCE_FAMILIES) as [EvidenceSubject, EvidenceFamily][]) {
    for (const value of valuesWith(subject, evidence)) {
      series.push({ subject, prometheusName: METRICS[family.metric].prometheusName, label: family.label, value });
    }
  }
  return series;
}
export { WHOLE_FAMILY };
// --- end issue 45 evidence ---
