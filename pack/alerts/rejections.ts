/** Unrecoverable gaps: resumes answered non-2xx, seen by the client and by the server. */
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { windowWords } from '../config/units';
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
        `sum by (${s.by('transport')}) (${series}{outcome="rejected"})\n/\n` +
        `sum by (${s.by('transport')}) (${series})\n> ${t.share}\n`,
      for: t.for,
      comment:
        'Unrecoverable gaps, client view: the resume was answered non-2xx, so the events since the cursor are gone\n(loudly).',
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
      expr: perInstanceShare(config, scope(config), 'rejected', t.share),
      for: t.for,
      comment: 'Same, server view per process.',
    },
    'MCP server rejects resumes and their gaps cannot be recovered.',
    '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the resumes it served over ' +
      `the last ${windowWords(config.rateWindow)} were answered non-2xx; those clients lost the events sent since ` +
      'their Last-Event-ID.',
  );
}
