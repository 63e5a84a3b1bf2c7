/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Is forkwatch there at all: a target without its series, or no series anywhere. */
import { INFO_NONE, METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function targetWithoutMetrics(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchTargetWithoutMetrics;
  const s = scope(config);
  const lookback = windowWords(t.lookback);
  const blind = s.sel(METRICS.instrumentationInfo.prometheusName, `sdk_class="${INFO_NONE}"`);
  return defineAlert(
    config,
    ALERT.targetWithoutMetrics,
    {
      expr:
        `(\n  ${s.sel('up')} == 1\n` +
        `  unless on (${s.by('instance')}) group by (${s.by('instance')}) (${s.named('forkwatch_.+')})\n)\n` +
        `and on (${s.by()}) max_over_time(job:forkwatch_series:count[${t.lookback}])\n` +
        `or on (${s.by('instance')})\n  group by (${s.by('instance')}) (${blind} == 1)\n`,
      for: t.for,
      comment:
        `A target that is up but exports no forkwatch series, in a job that exported them within the last ${lookback}\n` +
        '(so node exporters and other jobs are left alone); or a target where forkwatch is loaded but patched no\n' +
        'MCP SDK class and observes no fetch (its info metric says sdk_class="none"): its counters sit at 0\n' +
        'whatever happens, which looks exactly like a quiet, healthy process.',
    },
    'A scraped MCP target runs without working forkwatch instrumentation.',
    '{{ $labels.instance }} ({{ $labels.job }}) is up but forkwatch sees nothing there: it exports no forkwatch_* ' +
      `series while its job did within the last ${lookback}, or forkwatch is loaded and patched no MCP SDK class; ` +
      'forks on this target go unseen.',
  );
}

export function metricsAbsent(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchMetricsAbsent;
  const s = scope(config);
  return defineAlert(
    config,
    ALERT.metricsAbsent,
    {
      expr: `absent(${s.named('forkwatch_.+')})`,
      for: t.for,
      comment: 'No forkwatch series at all in this Prometheus (within the selector).',
    },
    'No forkwatch metrics reach Prometheus.',
    `None of the {{ with query ${JSON.stringify(`count(${s.sel('up')} == 1)`)} }}{{ . | first | value | humanize }}` +
      `{{ else }}0{{ end }} healthy scrape targets of this Prometheus has exported a forkwatch_* series for ` +
      `${windowWords(t.for)}; fork detection and the resume-loss SLO are blind.`,
  );
}
