/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Server view, per process: session ids it never held, answered as live sessions with nothing restored. */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function serverSessionsRevivedEmpty(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerSessionsRevivedEmpty;
  const s = scope(config);
  const empty = s.sel(METRICS.serverRevivedSessions.prometheusName, 'state="empty"');
  return defineAlert(
    config,
    ALERT.serverSessionsRevivedEmpty,
    {
      expr: `sum by (${s.by('instance')}) (increase(${empty}[${t.window}])) > 0`,
      for: t.for,
      comment:
        'Server view, per process: requests for a session id this process never held, answered as a live session\n' +
        'with nothing restored (tmcp answers any GET with a fresh stream): each is a client that silently started\n' +
        'over, a fork neither side reports.',
    },
    'MCP server answers unknown sessions with fresh streams.',
    '{{ $labels.instance }} ({{ $labels.job }}) answered {{ printf "%.0f" $value }} session id(s) it never held as ' +
      `live sessions in the last ${windowWords(t.window)}, with nothing to restore; those clients lost what was ` +
      'sent to them meanwhile without an error.',
  );
}
