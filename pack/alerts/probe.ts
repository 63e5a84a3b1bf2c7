/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe's alerts: on the series of `forkwatch exporter` (Prometheus relabels the probed URL into `instance`)
 * or of `forkwatch probe --prom-file/--pushgateway` (a `target` label). The probe's names come from the probe.
 */
import { probeMetrics } from '../../src/cli/probe/prometheus';
import type { ForkwatchConfig } from '../config/config';
import { seconds, windowWords } from '../config/units';
import { defineAlert } from './define';
import { ALERT, PROBE_GROUP } from './names';
import type { GroupSpec, RuleSpec } from './rule-model';

/** The probed endpoint, whichever way the series were collected. */
const TARGET = '{{ if $labels.target }}{{ $labels.target }}{{ else }}{{ $labels.instance }}{{ end }}';

export function probeGroups(config: ForkwatchConfig): GroupSpec[] {
  return [
    {
      name: PROBE_GROUP,
      comment:
        'forkwatch probe results: a synthetic client that checks every stream kind of an MCP endpoint for\n' +
        'resumability, for servers forkwatch cannot instrument (any language) and as a canary for those it does.',
      rules: [probeNotResumable(config), probeUntestable(config), probeStale(config)],
    },
  ];
}

function probeNotResumable(config: ForkwatchConfig): RuleSpec {
  const t = config.probe.alerts.ForkwatchProbeNotResumable;
  const verdict = probeMetrics().verdict.name;
  return defineAlert(
    config,
    ALERT.probeNotResumable,
    {
      expr: `${verdict}{verdict="not_resumable"} == 1\n`,
      for: t.for,
      comment:
        'Every probe over `for` found a condition failed on some stream kind: clients that lose a stream lose\n' +
        'events. forkwatch_probe_stream_verdict and forkwatch_probe_condition_ok say which.',
    },
    'The probe finds an MCP endpoint not session-resumable.',
    `${TARGET}: every probe for ${windowWords(t.for)} found it not resumable (see forkwatch_probe_stream_verdict ` +
      'and forkwatch_probe_condition_ok for the stream kind and condition); clients that lose a stream there lose events.',
  );
}

function probeUntestable(config: ForkwatchConfig): RuleSpec {
  const t = config.probe.alerts.ForkwatchProbeUntestable;
  const verdict = probeMetrics().verdict.name;
  return defineAlert(
    config,
    ALERT.probeUntestable,
    {
      expr: `${verdict}{verdict="untestable"} == 1\n`,
      for: t.for,
      comment:
        'The probe cannot reach a verdict (unreachable, not authorized, its deadline, or a standalone stream it\n' +
        'cannot make the server send on): a probe that tells nothing, so a ticket.',
    },
    'The probe cannot reach a verdict on an MCP endpoint.',
    `${TARGET}: the probe could not decide for ${windowWords(t.for)} whether the endpoint resumes sessions; run ` +
      '`forkwatch probe <url>` by hand to see which step or stream it could not exercise.',
  );
}

function probeStale(config: ForkwatchConfig): RuleSpec {
  const t = config.probe.alerts.ForkwatchProbeStale;
  const last = probeMetrics().lastRunTimestamp.name;
  return defineAlert(
    config,
    ALERT.probeStale,
    {
      expr: `time() - ${last} > ${seconds(t.window)}\nor\nup{job="${config.probe.job}"} == 0\n`,
      for: t.for,
      comment:
        'No fresh probe result: a textfile or Pushgateway result older than the window, or an exporter scrape that\n' +
        'fails (exporter down, or the scrape timed out).',
    },
    'The probe of an MCP endpoint has stopped reporting.',
    `${TARGET}: no probe result in the last ${windowWords(t.window)}, or the exporter's scrape fails; the endpoint's ` +
      'resumability is unwatched.',
  );
}
