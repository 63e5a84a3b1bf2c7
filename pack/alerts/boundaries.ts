/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Server view, per process: replays that crossed a boundary (src/core/replay-boundary.ts). */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

function anyResumeOutcome(config: ForkwatchConfig, outcome: string, window: string): string {
  const s = scope(config);
  const series = s.sel(METRICS.serverResumes.prometheusName, `outcome="${outcome}"`);
  return `sum by (${s.by('instance')}) (increase(${series}[${window}])) > 0`;
}

export function serverCrossSessionReplay(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerCrossSessionReplay;
  return defineAlert(
    config,
    ALERT.serverCrossSessionReplay,
    {
      expr: anyResumeOutcome(config, 'cross_session', t.window),
      for: t.for,
      labels: { severity: config.severities.page },
      comment:
        'Server view, per process: a resume replayed events this process stored for another session. A data leak\n' +
        'whether or not anything was lost, so it pages on the first one.',
    },
    "MCP server replayed one session's events to another session.",
    '{{ $labels.instance }} ({{ $labels.job }}): {{ printf "%.0f" $value }} resume(s) in the last ' +
      `${windowWords(t.window)} replayed events this process had stored for another session; the event store ` +
      'keys the standalone stream (`_GET_stream`) the same for every session, and those clients received another ' +
      "session's notifications and requests.",
  );
}

export function serverCompletedStreamResumed(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerCompletedStreamResumed;
  return defineAlert(
    config,
    ALERT.serverCompletedStreamResumed,
    {
      expr: anyResumeOutcome(config, 'completed_stream', t.window),
      for: t.for,
      comment:
        'Server view, per process: a resume cursor resolved to a request stream that had completed here (its\n' +
        'response written live): the cursor came from another log whose event ids collide with this one.',
    },
    'MCP server resumed request streams that had already completed.',
    '{{ $labels.instance }} ({{ $labels.job }}) answered {{ printf "%.0f" $value }} resume(s) in the last ' +
      `${windowWords(t.window)} from a request stream that had already completed there; the cursor came from ` +
      "another replica's log (event ids that are not unique across replicas), and the events of the stream the " +
      'client was waiting on are lost.',
  );
}
