/**
 * The alerting pack's alerts (alerts/forkwatch-alerts.rules.yml) that panels link to; each has a runbook at
 * alerts/runbooks/<name>.md. test/dashboards/cross-references.test.ts keeps this list in step with the rules.
 */
import { DEFAULT_CONFIG } from '../../alerts/src/config';
import { errorBudget } from '../../alerts/src/slo';

export const ALERT = {
  forksDetected: 'ForkwatchForksDetected',
  lossBudgetBurn: 'ForkwatchResumeLossBudgetBurn',
  serverUnknownCursors: 'ForkwatchServerUnknownCursors',
  serverCursorsIgnored: 'ForkwatchServerCursorsIgnored',
  resumesRejected: 'ForkwatchResumesRejected',
  serverResumesRejected: 'ForkwatchServerResumesRejected',
  gapSecondsHigh: 'ForkwatchResumeGapSecondsHigh',
  gapEventsHigh: 'ForkwatchResumeGapEventsHigh',
  duplicateDeliveries: 'ForkwatchDuplicateDeliveries',
  serverDeliveryBudgetBurn: 'ForkwatchServerDeliveryBudgetBurn',
  serverEventsWithoutListener: 'ForkwatchServerEventsWithoutListener',
  targetWithoutMetrics: 'ForkwatchTargetWithoutMetrics',
  metricsAbsent: 'ForkwatchMetricsAbsent',
} as const;

/** Error budget of the default loss SLO that ForkwatchResumeLossBudgetBurn pages on: 99.5 % of 2xx resumes lossless. */
export const LOSS_BUDGET = errorBudget(DEFAULT_CONFIG.clientResumeObjective);
