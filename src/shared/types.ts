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
