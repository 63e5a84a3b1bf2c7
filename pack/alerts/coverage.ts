/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Is forkwatch there at all: a target without its series, or no series anywhere. */
import { INFO_NONE, INFO_UNJUDGED, METRICS } from '../../src/shared/names';
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
  const blindFor = windowWords(t.blindFor);
  const info = METRICS.instrumentationInfo.prometheusName;
  const judgedNothing = s.sel(info, `sdk_class="${INFO_NONE}"`);
  const unjudged = s.sel(info, `sdk_class="${INFO_UNJUDGED.sdk_class}"`);
  const perTarget = (expr: string) => `group by (${s.by('instance')}) (${expr})`;
  return defineAlert(
    config,
    ALERT.targetWithoutMetrics,
    {
      expr:
        `(\n  ${s.sel('up')} == 1\n` +
        `  unless on (${s.by('instance')}) group by (${s.by('instance')}) (${s.named('forkwatch_.+')})\n)\n` +
        `and on (${s.by()}) max_over_time(job:forkwatch_series:count[${t.lookback}])\n` +
        `or on (${s.by('instance')})\n  ${perTarget(`${unjudged} == 1`)}\n` +
        `or on (${s.by('instance')})\n  ${perTarget(
          `min_over_time(${judgedNothing}[${t.blindFor}]) == 1 and ${judgedNothing} offset ${t.blindFor} == 1`,
        )}\n`,
      for: t.for,
      comment:
        `A target that is up but exports no forkwatch series, in a job that exported them within the last ${lookback}\n` +
        '(so node exporters and other jobs are left alone); or a target whose HTTP server answers MCP requests while\n' +
        'no MCP server transport class is patched (info sdk_class="unjudged": tmcp, @hono/mcp, an inlined server);\n' +
        `or a target where forkwatch patched no class and judged no MCP exchange for the whole last ${blindFor}\n` +
        '(info sdk_class="none", also an hour ago): its counters sit at 0 whatever happens, which looks exactly like a\n' +
        'quiet, healthy process. The hour spares an idle process that has simply had no traffic yet.',
    },
    'A scraped MCP target runs without working forkwatch instrumentation.',
    '{{ $labels.instance }} ({{ $labels.job }}) is up but forkwatch sees nothing there: it exports no forkwatch_* ' +
      `series while its job did within the last ${lookback}, its HTTP server answers MCP that no patched transport ` +
      `judges, or forkwatch patched no MCP class and judged no MCP exchange for the last ${blindFor}; forks on this target go ` +
      'unseen.',
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
