/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The PromQL of the overview dashboard, built from the metric-name contract in src/shared/names.ts and the pack's config
 * (selector, cluster and aggregation labels), so a renamed metric or label cannot leave a panel behind.
 */
import type { ForkwatchConfig } from '../config/config';
import { CLIENT_LOSS_RATIO, CLIENT_SLO_BAD, CLIENT_SLO_GOOD, SERVER_LOSS_RATIO } from '../alerts/slo';
import { METRICS } from '../../src/shared/names';
import { scopeMatchers } from './common';

const resumes = METRICS.clientResumes.prometheusName;
const forks = METRICS.clientForks.prometheusName;
const duplicates = METRICS.clientDuplicateEvents.prometheusName;
const foreignResponses = METRICS.clientForeignResponses.prometheusName;
const gapSeconds = `${METRICS.clientResumeGapSeconds.prometheusName}_bucket`;
const skipped = `${METRICS.clientResumeSkippedEvents.prometheusName}_bucket`;
const serverResumes = METRICS.serverResumes.prometheusName;
const replay = METRICS.serverResumeGapEvents.prometheusName;
const serverEvents = METRICS.serverEvents.prometheusName;
const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const info = METRICS.instrumentationInfo.prometheusName;
const sharedUnreplayed = METRICS.serverSharedUnreplayedEvents.prometheusName;
const replayedUnpending = METRICS.serverReplayedUnpendingEvents.prometheusName;
const fleetUndelivered = METRICS.serverFleetUndeliveredEvents.prometheusName;

/** Outcomes of the client SLO (2xx resumes whose ids can prove continuity): unverified, rejected, failed are out. */
export const SLO_OUTCOMES = [...CLIENT_SLO_GOOD, ...CLIENT_SLO_BAD];
const sloOutcomes = `outcome=~"${SLO_OUTCOMES.join('|')}"`;
/** Every 2xx outcome: the SLO's and `unverified`. */
const twoXxOutcomes = `outcome=~"${[...CLIENT_SLO_GOOD, 'unverified', ...CLIENT_SLO_BAD, 'inconclusive'].join('|')}"`;

/** The SLO windows the panels draw (a subset of the recorded ones). */
export const LOSS_WINDOWS = ['5m', '1h', '6h', '1d'] as const;

export function queries(config: ForkwatchConfig) {
  const { raw, perJob } = scopeMatchers(config);
  const cluster = config.clusterLabel;
  const rate = (series: string, extra = '') => `rate(${series}{${raw}${extra ? `, ${extra}` : ''}}[$__rate_interval])`;
  const increase = (series: string, extra = '') => `increase(${series}{${raw}${extra ? `, ${extra}` : ''}}[$__range])`;
  const aggregation = config.aggregationLabels.map(l => `${l}=~"$${l}"`);
  /**
   * Firing forkwatch alerts of the selected clusters and jobs, plus ForkwatchMetricsAbsent, which has no job label
   * (absent() over a regex keeps none) and would otherwise never show.
   */
  const firingAlerts =
    `ALERTS{${['alertname=~"Forkwatch.*"', 'alertstate="firing"', ...aggregation, 'job=~"$job"'].join(', ')}}` +
    ' or ALERTS{alertname="ForkwatchMetricsAbsent", alertstate="firing"}';
  const lossBy = config.aggregationLabels.length > 0 ? `${cluster}, job` : 'job';

  return {
    forksInRange: `sum(${increase(forks)})`,
    losslessShareInRange: `sum(${increase(resumes, 'outcome="resumed"')}) / sum(${increase(resumes, sloOutcomes)})`,
    unknownCursorsInRange: `sum(${increase(serverResumes, 'outcome="unknown_cursor"')})`,
    alertsFiring: `count(${firingAlerts}) or vector(0)`,

    forkRate: `sum by (transport, reason) (${rate(forks)})`,
    outcomeShare: `sum by (outcome) (${rate(resumes)})\n/ ignoring (outcome) group_left\nsum(${rate(resumes)})`,
    twoXxResumes: `sum(${rate(resumes, sloOutcomes)})`,
    losslessResumes: `sum(${rate(resumes, 'outcome="resumed"')})`,
    unverifiedShare:
      `sum by (${lossBy}) (${rate(resumes, 'outcome="unverified"')})\n/\n` +
      `sum by (${lossBy}) (${rate(resumes, twoXxOutcomes)})`,
    lossRatio: (window: string) => `${CLIENT_LOSS_RATIO(window)}{${perJob}}`,
    lossLegend: (window: string) =>
      config.aggregationLabels.length > 0 ? `{{${cluster}}} {{job}} ${window}` : `{{job}} ${window}`,

    gapSecondsHeatmap: `sum by (le) (increase(${gapSeconds}{${raw}}[$__rate_interval]))`,
    skippedHeatmap: `sum by (le) (increase(${skipped}{${raw}}[$__rate_interval]))`,
    replayQuantile: (q: number) => `histogram_quantile(${q}, sum by (le) (${rate(`${replay}_bucket`)}))`,
    replayMean: `sum(${rate(`${replay}_sum`)}) / sum(${rate(`${replay}_count`)})`,

    serverOutcomes: `sum by (instance, outcome) (${rate(serverResumes)})`,
    unknownCursorShare:
      `sum by (${lossBy}, instance) (${increase(serverResumes, 'outcome="unknown_cursor"')})\n` +
      `/ sum by (${lossBy}, instance) (${increase(serverResumes)})`,
    serverEvents: `sum by (instance) (${rate(serverEvents)})`,

    undeliveredByReason: `sum by (reason) (${rate(undelivered)})`,
    // The two sides of the shared-store fleet balance (sharedEventStore).
    sharedUnreplayed: `sum (${rate(sharedUnreplayed)})`,
    replayedUnpending: `sum (${rate(replayedUnpending)})`,
    // The fleet's delivery marks (fleetDelivery, issue 49): events no replica delivered, each counted once.
    fleetUndeliveredByReason: `sum by (reason) (${rate(fleetUndelivered)})`,
    deliveryLossRatio: (window: string) => `${SERVER_LOSS_RATIO(window)}{${perJob}}`,
    noListenerShare:
      `sum by (${lossBy}, instance) (${increase(undelivered, 'reason="no_listener"')})\n` +
      `/ sum by (${lossBy}, instance) (${increase(serverEvents)})`,

    duplicates: `sum by (transport) (${rate(duplicates)})`,
    /** What forkwatch patched in each process, and how (1 = now); `none` = loaded but blind. */
    instrumentation: `max by (instance, sdk_package, sdk_class, route, version) (${info}{${raw}} == 1)`,
    foreignResponses: `sum by (transport) (${rate(foreignResponses)})`,
    alertsTable: firingAlerts,
  };
}

export type Queries = ReturnType<typeof queries>;
