/**
 * The PromQL of the overview dashboard, built from the metric-name contract in src/names.ts so a renamed metric
 * cannot leave a panel behind.
 */
import { RESUME_OUTCOMES } from '../../src/core/verdict';
import { METRICS } from '../../src/names';
import { PER_JOB, RAW } from './common';

const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;
const duplicates = METRICS.clientDuplicateEvents.prometheusName;
const gapSeconds = `${METRICS.clientResumeGapSeconds.prometheusName}_bucket`;
const skipped = `${METRICS.clientResumeSkippedEvents.prometheusName}_bucket`;
const serverResumes = METRICS.serverResumes.prometheusName;
const replay = METRICS.serverResumeGapEvents.prometheusName;
const serverEvents = METRICS.serverEvents.prometheusName;

/** Outcomes of resumes the server answered with 2xx: all but `rejected` (non-2xx) and `failed` (network). */
export const TWO_XX_OUTCOMES = RESUME_OUTCOMES.filter(o => o !== 'rejected' && o !== 'failed');
const twoXx = `outcome=~"${TWO_XX_OUTCOMES.join('|')}"`;

/** Names of the alerting pack's recording rules used here (alerts/forkwatch-recording.rules.yml). */
export const LOSS_RATIO_RULE = (window: string) => `job:forkwatch_client_resume_loss:ratio_rate${window}`;
export const LOSS_WINDOWS = ['5m', '1h', '6h', '1d'] as const;

const rate = (series: string, extra = '') => `rate(${series}{${RAW}${extra ? `, ${extra}` : ''}}[$__rate_interval])`;
const increase = (series: string, extra = '') =>
  `increase(${series}{${RAW}${extra ? `, ${extra}` : ''}}[$__range])`;

/**
 * Firing forkwatch alerts of the selected jobs, plus ForkwatchMetricsAbsent, which has no job label (absent() over a
 * regex keeps none) and would otherwise never show.
 */
const FIRING_ALERTS =
  'ALERTS{alertname=~"Forkwatch.*", alertstate="firing", job=~"$job"}' +
  ' or ALERTS{alertname="ForkwatchMetricsAbsent", alertstate="firing"}';

export const Q = {
  forksInRange: `sum(${increase(forks)})`,
  losslessShareInRange: `sum(${increase(resumes, 'outcome="resumed"')}) / sum(${increase(resumes, twoXx)})`,
  unknownCursorsInRange: `sum(${increase(serverResumes, 'outcome="unknown_cursor"')})`,
  alertsFiring: `count(${FIRING_ALERTS}) or vector(0)`,

  forkRate: `sum by (transport, reason) (${rate(forks)})`,
  outcomeShare: `sum by (outcome) (${rate(resumes)})\n/ ignoring (outcome) group_left\nsum(${rate(resumes)})`,
  twoXxResumes: `sum(${rate(resumes, twoXx)})`,
  losslessResumes: `sum(${rate(resumes, 'outcome="resumed"')})`,
  lossRatio: (window: string) => `${LOSS_RATIO_RULE(window)}{${PER_JOB}}`,

  gapSecondsHeatmap: `sum by (le) (increase(${gapSeconds}{${RAW}}[$__rate_interval]))`,
  skippedHeatmap: `sum by (le) (increase(${skipped}{${RAW}}[$__rate_interval]))`,
  replayQuantile: (q: number) => `histogram_quantile(${q}, sum by (le) (${rate(`${replay}_bucket`)}))`,
  replayMean: `sum(${rate(`${replay}_sum`)}) / sum(${rate(`${replay}_count`)})`,

  serverOutcomes: `sum by (instance, outcome) (${rate(serverResumes)})`,
  unknownCursorShare:
    `sum by (job, instance) (${increase(serverResumes, 'outcome="unknown_cursor"')})\n` +
    `/ sum by (job, instance) (${increase(serverResumes)})`,
  serverEvents: `sum by (instance) (${rate(serverEvents)})`,

  duplicates: `sum by (transport) (${rate(duplicates)})`,
  alertsTable: FIRING_ALERTS,
} as const;
