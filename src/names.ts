/**
 * The one place that owns forkwatch's metric, label, span and event names.
 *
 * The Prometheus names here are a contract: dashboards, alerts and users' queries use them. Tests check the
 * OpenTelemetry exporter's scrape, the prom-client bridge, the dashboards and the rules against this module.
 */
import type { BoundaryOutcome } from './core/replay-boundary';
import { FORK_REASONS, RESUME_OUTCOMES } from './core/verdict';

export const INSTRUMENTATION_SCOPE = 'forkwatch';

export const CLIENT_TRANSPORTS = ['streamable_http', 'sse'] as const;
export type ClientTransportLabel = (typeof CLIENT_TRANSPORTS)[number];

export const SERVER_TRANSPORTS = ['streamable_http'] as const;
export type ServerTransportLabel = (typeof SERVER_TRANSPORTS)[number];

/**
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
 * through the server delivery SLO; `abandoned` (the client went away for good) never does.
 */
export const SERVER_UNDELIVERED_REASONS = ['stream_moved', 'no_listener', 'dropped', 'abandoned'] as const;
export type ServerUndeliveredReason = (typeof SERVER_UNDELIVERED_REASONS)[number];
/** The undelivered reasons that are loss to a live client (the server delivery SLO's bad events). */
export const SERVER_UNDELIVERED_LOSS_REASONS = [
  'stream_moved',
  'no_listener',
  'dropped',
] as const satisfies readonly ServerUndeliveredReason[];

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

/** Metric attribute (Prometheus label) keys. Plain words, so the exporter keeps them as written. */
export const LABEL = {
  transport: 'transport',
  outcome: 'outcome',
  reason: 'reason',
} as const;

export type MetricKind = 'counter' | 'histogram';

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
} as const;
