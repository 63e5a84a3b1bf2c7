/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Server delivery outside the SLO: events written while no client listened on this process. */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { percent, windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function serverEventsWithoutListener(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerEventsWithoutListener;
  const s = scope(config);
  const undelivered = s.sel(METRICS.serverUndeliveredEvents.prometheusName, 'reason="no_listener"');
  const written = `sum by (${s.by('instance')}) (increase(${s.sel(METRICS.serverEvents.prometheusName)}[${t.window}]))`;
  return defineAlert(
    config,
    ALERT.serverEventsWithoutListener,
    {
      expr:
        `sum by (${s.by('instance')}) (increase(${undelivered}[${t.window}]))\n/\n${written}\n` +
        `> ${t.share}\nand on (${s.by('instance')})\n${written} >= ${t.minEvents}\n`,
      for: t.for,
      comment:
        'Server view, per process: events written for a session stream that no client was listening to on this\n' +
        'process (no GET stream open, or it was on another process). A steady share is a routing or client bug\n' +
        'that may stay under the delivery budget, so it opens a ticket; the traffic floor keeps one event quiet.',
    },
    'MCP server writes events that no client is listening for.',
    '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the events it wrote in the ' +
      `last ${windowWords(t.window)} had no listening stream on this process (threshold ${percent(t.share)}); ` +
      'clients that resume elsewhere or never open the GET stream miss them.',
  );
}
