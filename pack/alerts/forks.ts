/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Client view, any occurrence is loss: forked resumes and duplicate frames. */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { anyIncrease, defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function forksDetected(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchForksDetected;
  const last = windowWords(t.window);
  return defineAlert(
    config,
    ALERT.forksDetected,
    {
      expr: anyIncrease(scope(config), t.window, METRICS.clientForks.prometheusName, 'transport', 'reason'),
      for: t.for,
      comment:
        `Any fork in the last ${last}. The second operand catches a series whose first scraped sample is\n` +
        'already > 0 (an exporter that does not start counters at 0, or a process that forked before its first\n' +
        'scrape): increase() needs two samples and never counts what happened before the first one. It only\n' +
        `counts while Prometheus already scraped the job ${last} ago, so a fresh Prometheus stays quiet.`,
    },
    'MCP stream resumes forked the session event log.',
    '{{ $labels.job }}: {{ printf "%.0f" $value }} resumed {{ $labels.transport }} stream(s) forked (reason ' +
      `{{ $labels.reason }}) in the last ${last}; the server answered 200 from an event log that does not ` +
      'continue the session, and the events sent in the gap are lost.',
  );
}

export function duplicateDeliveries(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchDuplicateDeliveries;
  return defineAlert(
    config,
    ALERT.duplicateDeliveries,
    {
      expr: anyIncrease(scope(config), t.window, METRICS.clientDuplicateEvents.prometheusName, 'transport'),
      for: t.for,
      comment:
        'Frames whose event id the client had already consumed (a replay from the wrong place). Same born-at-1\n' +
        'guard as ForkwatchForksDetected.',
    },
    'MCP clients received events they had already consumed.',
    `{{ $labels.job }}: {{ printf "%.0f" $value }} duplicate {{ $labels.transport }} frame(s) in the last ` +
      `${windowWords(t.window)}; a resumed stream replayed events the client had already handled.`,
  );
}
