/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Typed access to the fork lab (lab/harness.mjs) and to what its reports carry. */
// @ts-expect-error: plain ESM module without types
import * as harness from '../../lab/harness.mjs';

export { sample, sampleOne } from './scrape';

export interface LabSpan {
  name: string;
  traceId: string;
  status: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
}

export interface LabReport {
  name: string;
  moduleSystem: 'cjs' | 'esm';
  emittedByA: number;
  received: { origin: string; seq: number; stream?: string; live?: boolean }[];
  lost: number[];
  duplicatesSeenByApp: number;
  errors: { name: string; message: string }[];
  forkInfos: { outcome: string; reason?: string; cursor?: string; firstEventId?: string }[];
  httpLog: { method: string; kind: string; target: string; status: number | null; lastEventId?: string }[];
  sdkPatched: boolean;
  spans: LabSpan[];
  metrics: string;
  toolCall?: string;
  servers?: Record<string, { spans: LabSpan[]; metrics: string }>;
}

export interface LabOptions {
  moduleSystem?: 'cjs' | 'esm';
  instrumentation?: Record<string, unknown>;
  verdictTimeoutMs?: number;
  resolveFrom?: string;
  sdk?: 'v1' | 'v2';
  metricsPort?: number;
  /** The app's MCP client: the SDK's (default), @ai-sdk/mcp's, mcp-remote's process, or a client stack's, loaded from resolveFrom. */
  client?: 'sdk' | 'ai-sdk' | 'mcp-remote' | 'stack';
  /** With client 'stack': its name in lab/stacks/client-stacks.mjs. */
  stack?: string;
  /** Overrides of server A's configuration (LAB_SERVER). */
  serverA?: Record<string, unknown>;
  timeoutMs?: number;
}

export const runLabScenario: (name: string, options?: LabOptions) => Promise<LabReport> = harness.runLabScenario;

export function resumeSpans(report: LabReport): LabSpan[] {
  return report.spans.filter(s => s.name === 'forkwatch.client.resume');
}

export function firstFrameEvents(report: LabReport) {
  return resumeSpans(report).map(s => s.events.find(e => e.name === 'forkwatch.resume.first_frame')!.attributes);
}
