/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Typed access to the fork lab's server view (lab/harness.mjs `servers`, `serverView`). */
// @ts-expect-error: plain ESM module without types
import * as harness from '../../lab/harness.mjs';
import { ATTR, SPAN } from '../../src/shared/names';
import type { LabOptions, LabReport, LabSpan } from '../support/lab';

export interface LabSpanWithIds extends LabSpan {
  spanId: string;
  parentSpanId?: string;
}

export interface ServerReport {
  moduleSystem: 'cjs' | 'esm';
  sdkVersion: string;
  sdkPatched: boolean;
  spans: LabSpanWithIds[];
  metrics: string;
  delivery?: { sessionsWithPending: number; awaitingVerdict: number };
}

export interface ServerLabOptions extends LabOptions {
  serverSdk?: 'v1' | 'v2';
  serverResolveFrom?: string;
  serverTelemetry?: boolean;
  serverInstrumentation?: Record<string, unknown>;
  /** Wait until no session stream awaits a delivery verdict on any server. */
  deliveryVerdicts?: boolean;
  /** Then the servers expire their sessions (transport.close(), no DELETE). */
  closeSessions?: boolean;
}

export type ServerLabReport = Omit<LabReport, 'servers' | 'spans'> & {
  spans: LabSpanWithIds[];
  servers: Record<string, ServerReport>;
};

export const runLab: (name: string, options?: ServerLabOptions) => Promise<ServerLabReport> = harness.runLabScenario;
export const SCENARIOS: Record<string, { serverStory?: string; b: unknown }> = harness.SCENARIOS;
export const serverView: (
  servers: Record<string, ServerReport>,
) => Record<
  string,
  { resumes: Record<string, number>; outcomes: string[]; replayedEvents: (number | null)[]; events: number }
> = harness.serverView;

export const serverResumeSpans = (server: ServerReport) => server.spans.filter(s => s.name === SPAN.serverResume);
export const clientResumeSpans = (report: ServerLabReport) => report.spans.filter(s => s.name === SPAN.clientResume);
export const outcomeOf = (span: LabSpan) => span.attributes[ATTR.serverOutcome];
