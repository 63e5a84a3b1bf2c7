/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Recording rules (level:metric:operations): the series the alerts and the dashboard read. */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { RECORDING_GROUP, SLO_GROUP } from './names';
import type { GroupSpec } from './rule-model';
import { perRequestRecordingRules } from './per-request';
import { sloRecordingRules } from './slo';

export function recordingGroups(config: ForkwatchConfig): GroupSpec[] {
  const s = scope(config);
  const w = config.rateWindow;
  const lookback = config.alerts.ForkwatchTargetWithoutMetrics.lookback;
  const rate = (metric: string, ...extra: string[]) => `sum by (${s.by(...extra)}) (rate(${s.sel(metric)}[${w}]))`;
  return [
    {
      name: RECORDING_GROUP,
      rules: [
        {
          record: `job:forkwatch_client_resumes:rate${w}`,
          expr: rate(METRICS.clientResumes.prometheusName, 'transport', 'outcome'),
          comment: 'Client side: resume attempts, forks and duplicate frames per second.',
        },
        {
          record: `job:forkwatch_client_forks:rate${w}`,
          expr: rate(METRICS.clientForks.prometheusName, 'transport', 'reason'),
        },
        {
          record: `job:forkwatch_client_duplicate_events:rate${w}`,
          expr: rate(METRICS.clientDuplicateEvents.prometheusName, 'transport'),
        },
        {
          record: `job_instance:forkwatch_server_resumes:rate${w}`,
          expr: rate(METRICS.serverResumes.prometheusName, 'instance', 'outcome'),
          comment: 'Server side, per process: where cross-process routing or a missing event store shows.',
        },
        {
          record: `job:forkwatch_client_resume_gap_seconds_bucket:rate${w}`,
          expr: rate(`${METRICS.clientResumeGapSeconds.prometheusName}_bucket`, 'le'),
          comment: 'Gap histograms, for histogram_quantile() per job.',
        },
        {
          record: `job:forkwatch_server_resume_gap_events_bucket:rate${w}`,
          expr: rate(`${METRICS.serverResumeGapEvents.prometheusName}_bucket`, 'le'),
        },
        {
          record: 'job:forkwatch_series:count',
          expr: `count by (${s.by()}) (${s.named('forkwatch_.+')})`,
          comment: `Which jobs export forkwatch at all (ForkwatchTargetWithoutMetrics looks ${lookback} back on this).`,
        },
      ],
    },
    { name: SLO_GROUP, rules: [...sloRecordingRules(config), ...perRequestRecordingRules(config)] },
  ];
}
