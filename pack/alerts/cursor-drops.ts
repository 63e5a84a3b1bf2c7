/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Client reconnects that dropped their cursor right after a resume that got no frame: a replica going away (a
 * rolling restart, a failover) leaves exactly this, lossless when nothing was sent in the gap, and the servers'
 * delivery ledger (ForkwatchServerDeliveryBudgetBurn, the fleet balance) pages when something was. One restart is
 * no ticket; the same thing in several windows of a few hours is (replicas that keep going away, a drain that
 * does not hold the streams' clients, SDK #2499 on every deploy).
 */
import type { RESUME_OUTCOMES } from '../../src/core/verdict';
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

const OUTCOME = 'cursor_dropped_after_inconclusive' satisfies (typeof RESUME_OUTCOMES)[number];

export function cursorsDroppedAfterInconclusive(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchCursorsDroppedAfterInconclusive;
  const s = scope(config);
  const series = s.sel(METRICS.clientResumes.prometheusName, `outcome="${OUTCOME}"`);
  return defineAlert(
    config,
    ALERT.cursorsDroppedAfterInconclusive,
    {
      expr:
        `count_over_time(\n  (sum by (${s.by('transport')}) (increase(${series}[${t.window}])) > 0)[${t.lookback}:${t.window}]\n)\n` +
        `>= ${t.minWindows}\n`,
      for: t.for,
      comment:
        `Reconnects without their cursor after a resume that got no frame, in at least ${t.minWindows} windows of\n` +
        `${windowWords(t.window)} in the last ${windowWords(t.lookback)}: one rolling restart or failover\n` +
        'fills one or two windows and stays quiet (pending included); a loss in its gap pages on the server side.',
    },
    'MCP clients keep reconnecting without their cursor after resumes that got no frame.',
    `{{ $labels.job }}: {{ printf "%.0f" $value }} windows of ${windowWords(t.window)} in the last ` +
      `${windowWords(t.lookback)} had {{ $labels.transport }} reconnects that dropped their cursor after a resume ` +
      'answered 200 without a frame (replicas going away); events sent in those gaps were not replayed.',
  );
}
