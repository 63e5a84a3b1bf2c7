/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Unrecoverable gaps: resumes answered non-2xx, seen by the client and by the server. */
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { seconds, windowWords } from '../config/units';
import { defineAlert, perInstanceShare } from './define';
import { ALERT } from './names';
import type { RuleSpec } from './rule-model';

export function resumesRejected(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchResumesRejected;
  const s = scope(config);
  const series = `job:forkwatch_client_resumes:rate${config.rateWindow}`;
  return defineAlert(
    config,
    ALERT.resumesRejected,
    {
      expr:
        `sum by (${s.by('transport')}) (${series}{outcome=~"rejected|rejected_stream_held"})\n/\n` +
        `sum by (${s.by('transport')}) (${series})\n> ${t.share}\n` +
        `and on (${s.by('transport')})\nsum by (${s.by('transport')}) (${series}) * ${seconds(config.rateWindow)} >= ${t.minResumes}\n`,
      for: t.for,
      comment:
        'Unrecoverable gaps, client view: the resume was answered non-2xx, so the events since the cursor are gone\n' +
        `(loudly). The floor (${t.minResumes} resumes in the rate window) keeps one refused resume of a quiet client quiet.\n` +
        'rejected_stream_held is a 409 while the stream still had a connection (a dead one a balancer holds).',
    },
    'MCP stream resumes are rejected and their gaps cannot be recovered.',
    '{{ $labels.job }}: {{ $value | humanizePercentage }} of {{ $labels.transport }} resume attempts over the last ' +
      `${windowWords(config.rateWindow)} were answered non-2xx; those clients lost the events sent since their ` +
      'Last-Event-ID.',
  );
}

export function serverResumesRejected(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerResumesRejected;
  return defineAlert(
    config,
    ALERT.serverResumesRejected,
    {
      expr: perInstanceShare(config, scope(config), 'rejected', t),
      for: t.for,
      comment:
        "Same, server view per process. forkwatch probe's deliberate refusals (its never-issued cursor, its 409\n" +
        `retries) are probe_rejected, on neither side of the share; floor ${t.minResumes} resumes in the rate window.`,
    },
    'MCP server rejects resumes and their gaps cannot be recovered.',
    '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the resumes it served over ' +
      `the last ${windowWords(config.rateWindow)} were answered non-2xx; those clients lost the events sent since ` +
      'their Last-Event-ID.',
  );
}
