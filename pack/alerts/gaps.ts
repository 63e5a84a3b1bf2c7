/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Large gaps: long disconnections (client view) and large replays (server view). */
import type { ForkwatchConfig } from '../config/config';
import { windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

const pLabel = (quantile: number) => `p${Number((quantile * 100).toPrecision(10))}`;

export function resumeGapSecondsHigh(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchResumeGapSecondsHigh;
  const series = `job:forkwatch_client_resume_gap_seconds_bucket:rate${config.rateWindow}`;
  return defineAlert(
    config,
    ALERT.gapSecondsHigh,
    {
      expr: `histogram_quantile(${t.quantile}, ${series}) > ${t.seconds}`,
      for: t.for,
      comment: 'Large gaps, client view: time from losing a stream to the first frame of its resume.',
    },
    'MCP clients stay disconnected for long before their streams resume.',
    `{{ $labels.job }}: the ${pLabel(t.quantile)} time from losing a stream to the first frame of its resume is ` +
      `{{ $value | humanizeDuration }} over the last ${windowWords(config.rateWindow)} (threshold ${t.seconds}s).`,
  );
}

export function resumeGapEventsHigh(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchResumeGapEventsHigh;
  const series = `job:forkwatch_server_resume_gap_events_bucket:rate${config.rateWindow}`;
  return defineAlert(
    config,
    ALERT.gapEventsHigh,
    {
      expr: `histogram_quantile(${t.quantile}, ${series}) > ${t.events}`,
      for: t.for,
      comment: 'Large gaps, server view: events replayed per resume.',
    },
    'MCP servers replay very large gaps on resume.',
    `{{ $labels.job }}: the ${pLabel(t.quantile)} number of events replayed per resume is {{ printf "%.0f" $value }} ` +
      `over the last ${windowWords(config.rateWindow)} (threshold ${t.events}).`,
  );
}
