/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What the patch modules need from the instrumentation, read at event time so that setConfig(), a new
 * MeterProvider or a new TracerProvider take effect without re-patching.
 */
import type { DiagLogger, Tracer } from '@opentelemetry/api';
import type { EventIdCodec } from '../core/codecs';
import type { SessionLedger } from '../core/ledger';
import type { ForkwatchInstruments } from './metrics';
import type { FleetDeliveryMarks, OnForkMode, ResumeVerdictInfo } from './types';

/** Protocol 2026-07-28: what the per-request observers remember, and for how long. */
export interface PerRequestLimits {
  /** How long after a broken exchange a request with the same key counts as its re-issue. */
  reissueWindowMs: number;
  /** Broken exchanges, task ids and tool names remembered at most (each). */
  maxTracked: number;
  /**
   * The server's peer keeps a request open after the client's side broke (HAProxy without `option abortonclose`):
   * a response written to an open request is `unconfirmed`, not `delivered`.
   */
  balancerHidesCloses: boolean;
}

export interface ResolvedSettings {
  onFork: OnForkMode;
  codec: EventIdCodec;
  verdictTimeoutMs: number;
  captureEventIds: boolean;
  captureRawSessionId: boolean;
  propagateContext: boolean;
  /** Observe `fetch` calls (observeFetch): the global one, and a transport's own. */
  observeFetch: boolean;
  /** The delivery ledger's window (deliveryWindowMs). */
  deliveryWindowMs: number;
  /** Protocol 2026-07-28: the re-issue window and the bounds of what is remembered. */
  perRequest: PerRequestLimits;
  /** Replicas share one event store (sharedEventStore): loss is judged with the fleet balance. */
  sharedEventStore: boolean;
  /** The fleet's delivery marks (fleetDelivery), if the app handed some. */
  fleetDelivery: FleetDeliveryMarks | undefined;
}

export interface ForkwatchRuntime {
  readonly tracer: Tracer;
  readonly instruments: ForkwatchInstruments;
  readonly settings: ResolvedSettings;
  readonly diag: DiagLogger;
  /** Sessions seen by client transports. */
  readonly clientLedger: SessionLedger;
  /** Runs the user's onForkDetected hook safely. */
  notifyFork(info: ResumeVerdictInfo): void;
  /** False once the instrumentation is disabled: patched code then passes everything straight through. */
  readonly enabled: boolean;
  /** The wire observer judged an MCP exchange: it now counts as coverage (forkwatch_instrumentation_info). */
  wireJudged(): void;
}

/** Monotonic milliseconds: wall-clock jumps must not distort gap times. */
export function nowMs(): number {
  return performance.now();
}
