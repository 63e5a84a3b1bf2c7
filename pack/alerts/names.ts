/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The pack's alert names and rule group names: the rules define them, panels link to their runbooks
 * (alerts/runbooks/<name>.md), and test/dashboards/cross-references.test.ts keeps this list in step with the rules.
 */
import { DEFAULT_CONFIG } from '../config/config';
import { errorBudget } from '../config/links';

export const ALERT = {
  forksDetected: 'ForkwatchForksDetected',
  lossBudgetBurn: 'ForkwatchResumeLossBudgetBurn',
  serverUnknownCursors: 'ForkwatchServerUnknownCursors',
  serverCursorsIgnored: 'ForkwatchServerCursorsIgnored',
  serverCrossSessionReplay: 'ForkwatchServerCrossSessionReplay',
  serverCompletedStreamResumed: 'ForkwatchServerCompletedStreamResumed',
  resumesRejected: 'ForkwatchResumesRejected',
  serverResumesRejected: 'ForkwatchServerResumesRejected',
  gapSecondsHigh: 'ForkwatchResumeGapSecondsHigh',
  gapEventsHigh: 'ForkwatchResumeGapEventsHigh',
  duplicateDeliveries: 'ForkwatchDuplicateDeliveries',
  serverDeliveryBudgetBurn: 'ForkwatchServerDeliveryBudgetBurn',
  serverEventsWithoutListener: 'ForkwatchServerEventsWithoutListener',
  targetWithoutMetrics: 'ForkwatchTargetWithoutMetrics',
  metricsAbsent: 'ForkwatchMetricsAbsent',
  serverResultDeliveryBudgetBurn: 'ForkwatchServerResultDeliveryBudgetBurn',
  serverDuplicateExecutionRisk: 'ForkwatchServerDuplicateExecutionRisk',
  serverPublishesWithoutListener: 'ForkwatchServerPublishesWithoutListener',
  clientResultsLost: 'ForkwatchClientResultsLost',
  clientExchangesReissued: 'ForkwatchClientExchangesReissued',
  clientListenStreamsDropped: 'ForkwatchClientListenStreamsDropped',
  clientListenGapSecondsHigh: 'ForkwatchClientListenGapSecondsHigh',
  serverOrphanedTasks: 'ForkwatchServerOrphanedTasks',
  probeNotResumable: 'ForkwatchProbeNotResumable',
  probeUntestable: 'ForkwatchProbeUntestable',
  probeStale: 'ForkwatchProbeStale',
  cursorsDroppedAfterInconclusive: 'ForkwatchCursorsDroppedAfterInconclusive',
  sessionsRevived: 'ForkwatchSessionsRevived',
  reconnectStorm: 'ForkwatchReconnectStorm',
} as const;

export const ALERT_GROUP = 'forkwatch';
export const PROBE_GROUP = 'forkwatch-probe';
export const RECORDING_GROUP = 'forkwatch.rules';
export const SLO_GROUP = 'forkwatch-slo.rules';

/** Error budget of the default loss SLO that ForkwatchResumeLossBudgetBurn pages on: 99.5 % of 2xx resumes lossless. */
export const LOSS_BUDGET = errorBudget(DEFAULT_CONFIG.clientResumeObjective);
