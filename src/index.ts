/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch's public API. Everything else under build/ is internal and may change in any release.
 */

// The instrumentation and its configuration.
export { ForkwatchInstrumentation } from './lifecycle/instrumentation';
export type { ForkwatchInstrumentationConfig, OnForkMode, ResumeVerdictInfo } from './shared/types';
export type { LedgerLimits } from './core/ledger';
export { DEFAULT_LEDGER_LIMITS } from './core/ledger';

// Fail-loud mode: the error the transport's onerror receives.
export { StreamForkDetected } from './shared/errors';

// What a verdict says (ResumeVerdictInfo.outcome and .reason).
export type { ForkReason, ResumeOutcome } from './core/verdict';
export { FORK_REASONS, RESUME_OUTCOMES } from './core/verdict';

// Event-id codecs: the built-in ones, and the interface for your own (the `codec` option).
export type { BuiltinCodecName, DecodedEventId, EventIdCodec } from './core/codecs';
export {
  BUILTIN_CODEC_NAMES,
  autoCodec,
  csharpCodec,
  goSdkCodec,
  hexSequenceCodec,
  integerCodec,
  javaSdkCodec,
  kotlinCodec,
  mcpProxyCodec,
  opaqueCodec,
  rmcpCodec,
  sdkCodec,
} from './core/codecs';

// The hash recorded on spans instead of the raw Mcp-Session-Id, to join spans with your own logs.
export { hashSessionId } from './shared/session-id';

// Metric, span and attribute names: the contract dashboards and alerts are built on.
export type { MetricSpec } from './shared/names';
export { ATTR, INSTRUMENTATION_SCOPE, METRICS, SPAN, SPAN_EVENT } from './shared/names';

// `forkwatch probe --json`: the report's shape (JSON Schema: forkwatch/probe-report.schema.json).
export type {
  ConditionName,
  ConditionResult,
  ConditionStatus,
  ProbeForkReason,
  ProbeReport,
  ProbeVerdict,
  ResumeAttempt,
  ResumeFailureReason,
  ResumeSummary,
} from './cli/probe/report';
export type { StepRecord } from './cli/probe/mcp-http';

export { PACKAGE_NAME, PACKAGE_VERSION } from './shared/version';
