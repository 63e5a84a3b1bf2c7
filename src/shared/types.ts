/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Public configuration and hook types of ForkwatchInstrumentation. */
import type { InstrumentationConfig } from '@opentelemetry/instrumentation';
import type { BuiltinCodecName, EventIdCodec } from '../core/codecs';
import type { LedgerLimits } from '../core/defaults';
import type { ForkReason, ResumeOutcome } from '../core/verdict';

/** What forkwatch knows about a resume when it reaches a verdict. */
export interface ResumeVerdictInfo {
  /** `client` for a resumed stream seen by the client transport. */
  side: 'client';
  transport: 'streamable_http' | 'sse';
  outcome: ResumeOutcome;
  /** Set when outcome is `forked`. */
  reason?: ForkReason;
  /** The Last-Event-ID that was sent (or, for cursor_dropped, the cursor the client held but did not send). */
  cursor?: string;
  /** The id of the first frame of the resumed stream, if any. */
  firstEventId?: string;
  /** The Mcp-Session-Id, raw: this is the application's own data, handed to its own hook. */
  sessionId?: string;
  /** HTTP status of the resume GET, when known. */
  httpStatus?: number;
}

export type OnForkMode = 'record' | 'abort';

export interface ForkwatchInstrumentationConfig extends InstrumentationConfig {
  /**
   * `record` (default): report forks and leave the stream alone.
   * `abort`: fail loud: the forked frame never reaches the SDK's handlers, the stream is cancelled, its automatic
   * reconnection is not scheduled, and the transport's onerror receives a StreamForkDetected error.
   */
  onFork?: OnForkMode;
  /** Called on every fork verdict, in both modes. Exceptions are caught and logged. */
  onForkDetected?: (info: ResumeVerdictInfo) => void;
  /** How to read event ids: a built-in codec name (default `auto`) or your own codec. */
  codec?: BuiltinCodecName | EventIdCodec;
  /** A resumed stream with no frame after this long is `inconclusive`. Default 10 000 ms. */
  verdictTimeoutMs?: number;
  /** Put event ids (cursor, first id) on spans. Default true. */
  captureEventIds?: boolean;
  /** Put the raw Mcp-Session-Id on spans as `mcp.session.id`. Default false: only a hash is recorded. */
  captureRawSessionId?: boolean;
  /** Bounds of the per-session ledger. */
  ledger?: Partial<LedgerLimits>;
  /**
   * Server side: how long a session that is still active on this process has to come back (resume here) for events
   * stored while its stream had no connection here, before they count as undelivered. Default 30 000 ms.
   */
  deliveryWindowMs?: number;
  /**
   * Server side: the event store is shared by every replica (Redis, a database), so a resume on another replica
   * can replay what this one stored. Events that were pending here and not replayed here then count in
   * forkwatch_server_shared_unreplayed_events_total instead of as loss (`stream_moved`, `no_listener`), and the
   * rules' fleet balance weighs them against the events other replicas replayed. Default false: one store per
   * process, and every process judges alone.
   */
  sharedEventStore?: boolean;
  /**
   * Server side, opt-in (issue 49): delivery marks in the store the replicas share, so the fleet counts the events
   * no replica delivered, each once (forkwatch_server_fleet_undelivered_events_total). forkwatch has no store client
   * of its own: hand it an object with these three methods over your own client (deploy/redis-delivery-marks.cjs
   * does it for node-redis). With it, the loss one process cannot judge alone (`stream_moved`, `no_listener`) is
   * the marks' to count: the fleet balance's counter stays at 0 and those reasons are not counted per process.
   * Works with `sharedEventStore` (event ids are the shared log's) and without (a log per replica: marks are keyed
   * by process). Never awaited on the host's path; a failing call is a diagnostic, and its events go uncounted.
   */
  fleetDelivery?: FleetDeliveryMarks;
  /** Inject the trace context into resume GETs, so the server's resume span joins the client's trace. Default true. */
  propagateContext?: boolean;
  /**
   * Observe session SSE GETs sent through `globalThis.fetch` by clients forkwatch has no class patch for
   * (@ai-sdk/mcp's HTTP transport), and every protocol 2026-07-28 POST (the 2.x client, @ai-sdk/mcp, raw fetch: how
   * its response ended, re-issues, listen gaps), including those a patched SDK transport sends through its own `fetch`
   * option. Default true. Session GETs of patched SDK transports are left to their patch.
   */
  observeFetch?: boolean;
  /**
   * Protocol 2026-07-28 (per-request MCP). `reissueWindowMs`: how long after a broken exchange a request with the
   * same principal, method, name and arguments counts as its re-issue (default 60 000). `maxTracked`: broken
   * exchanges, task ids and tool names remembered at most, each (default 10 000). `balancerHidesCloses`: set it when
   * the server's HTTP peer keeps the server's connection open after the client's side broke (HAProxy without
   * `option abortonclose`): the server cannot see a client leave, so a result written to an open request counts
   * `unconfirmed` instead of `delivered`, and a request with the same key that came while it was open counts as its
   * probable re-issue (default false).
   */
  perRequest?: { reissueWindowMs?: number; maxTracked?: number; balancerHidesCloses?: boolean };
}

// --- issue 49 ---
/** A mark of an event a replica stored while its stream had no connection on that replica. */
export interface PendingDeliveryMark {
  /** The id the event store returned for it. */
  readonly eventId: string;
  /** When it was stored (ms since the epoch, this replica's clock). */
  readonly storedAt: number;
  /** It belongs to the session's standalone (GET) stream. */
  readonly standalone: boolean;
}

/**
 * Delivery marks in the fleet's shared store (`fleetDelivery`). Every method may return a promise; forkwatch never
 * awaits it on the host's path. `claim` must be atomic: an event's mark is removed and counted by one caller only.
 */
export interface FleetDeliveryMarks {
  /** Marks these events of the session pending, unless a replay already delivered them (the marks may come late). */
  pending(sessionId: string, marks: readonly PendingDeliveryMark[]): unknown;
  /** A replay on this replica sent these events of the session: their marks go (or never come). */
  delivered(sessionId: string, eventIds: readonly string[]): unknown;
  /** Removes the session's marks stored before `storedBefore` (standalone ones only if asked) and returns how many. */
  claim(
    sessionId: string,
    claim: { readonly storedBefore: number; readonly standaloneOnly: boolean },
  ): number | Promise<number>;
}
// --- end issue 49 ---
