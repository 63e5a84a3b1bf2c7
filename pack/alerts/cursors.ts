/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Server view, per process: resume cursors the process cannot honour. */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { defineAlert, perInstanceShare } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function serverUnknownCursors(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerUnknownCursors;
  return defineAlert(
    config,
    ALERT.serverUnknownCursors,
    {
      expr: perInstanceShare(config, scope(config), 'unknown_cursor', t),
      for: t.for,
      comment:
        "Server view, per process: resumes whose Last-Event-ID the event store does not know (the session's log is\n" +
        "on another process, or was lost in a restart). forkwatch probe's never-issued cursors are probe_rejected,\n" +
        `not counted; the floor (${t.minResumes} resumes in the rate window) keeps one unknown cursor of a quiet process quiet.`,
    },
    'MCP server receives resume cursors it has no events for.',
    '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the resumes it served over ' +
      `the last ${windowWords(config.rateWindow)} carried a Last-Event-ID its event store does not know; those ` +
      'streams cannot replay what the client missed.',
  );
}

export function serverCursorsIgnored(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerCursorsIgnored;
  const s = scope(config);
  const ignored = s.sel(METRICS.serverResumes.prometheusName, 'outcome="ignored"');
  return defineAlert(
    config,
    ALERT.serverCursorsIgnored,
    {
      expr: `sum by (${s.by('instance')}) (increase(${ignored}[${t.window}])) > 0`,
      for: t.for,
      comment: 'Server view, per process: Last-Event-ID ignored because the process has no event store at all.',
    },
    'MCP server ignores resume cursors.',
    '{{ $labels.instance }} ({{ $labels.job }}) ignored the Last-Event-ID of {{ printf "%.0f" $value }} resume(s) ' +
      `in the last ${windowWords(t.window)}; it runs without an event store, so nothing a client missed is replayed.`,
  );
}
