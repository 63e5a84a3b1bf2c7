/** The alerts (monitoring-mixin style): thresholds and `for` are justified in alerts/runbooks/. */
import { METRICS } from '../../src/names';
import { type ForkwatchConfig, dashboardUrl, runbookUrl } from './config';
import type { GroupSpec, RuleSpec } from './rule-model';
import { scope } from './scope';
import { sloAlerts } from './slo';

export const ALERT_GROUP = 'forkwatch';

export function alertGroups(config: ForkwatchConfig): GroupSpec[] {
  const s = scope(config);
  const ticket = config.severities.ticket;
  type Spec = Omit<RuleSpec, 'alert' | 'annotations'>;
  const alert = (name: string, spec: Spec, summary: string, description: string): RuleSpec => ({
    alert: name,
    ...spec,
    labels: { severity: ticket, ...spec.labels },
    annotations: { summary, description, runbook_url: runbookUrl(config, name), dashboard_url: dashboardUrl(config) },
  });
  /** Any increase in 10 minutes, plus a series born above 0 while the job was already scraped 10 minutes ago. */
  const anyIncrease = (metric: string, ...labels: string[]) => {
    const m = s.sel(metric);
    return (
      `sum by (${s.by(...labels)}) (\n    (increase(${m}[10m]) > 0)\n  or\n    (\n` +
      `      (${m} > 0 unless ${m} offset 10m)\n` +
      `      and on (${s.by()}) group by (${s.by()}) (${s.sel('up')} offset 10m)\n    )\n)\n`
    );
  };
  const perInstanceShare = (outcome: string) =>
    `sum by (${s.by('instance')}) (job_instance:forkwatch_server_resumes:rate5m{outcome="${outcome}"})\n/\n` +
    `sum by (${s.by('instance')}) (job_instance:forkwatch_server_resumes:rate5m)\n> 0.05\n`;
  const slo = sloAlerts(config);
  const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
  const serverResumes = METRICS.serverResumes.prometheusName;
  const written = `sum by (${s.by('instance')}) (increase(${s.sel(METRICS.serverEvents.prometheusName)}[1h]))`;

  const rules: RuleSpec[] = [
    alert(
      'ForkwatchForksDetected',
      {
        expr: anyIncrease(METRICS.clientForks.prometheusName, 'transport', 'reason'),
        for: '1m',
        comment:
          'Any fork in the last 10 minutes. The second operand catches a series whose first scraped sample is\n' +
          'already > 0 (an exporter that does not start counters at 0, or a process that forked before its first\n' +
          'scrape): increase() needs two samples and never counts what happened before the first one. It only\n' +
          'counts while Prometheus already scraped the job 10 minutes ago, so a fresh Prometheus stays quiet.',
      },
      'MCP stream resumes forked the session event log.',
      '{{ $labels.job }}: {{ printf "%.0f" $value }} resumed {{ $labels.transport }} stream(s) forked (reason ' +
        '{{ $labels.reason }}) in the last 10 minutes; the server answered 200 from an event log that does not ' +
        'continue the session, and the events sent in the gap are lost.',
    ),
    ...slo.client,
    alert(
      'ForkwatchServerUnknownCursors',
      {
        expr: perInstanceShare('unknown_cursor'),
        for: '15m',
        comment:
          "Server view, per process: resumes whose Last-Event-ID the event store does not know (the session's log is\n" +
          'on another process, or was lost in a restart).',
      },
      'MCP server receives resume cursors it has no events for.',
      '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the resumes it served over ' +
        'the last 5 minutes carried a Last-Event-ID its event store does not know; those streams cannot replay what ' +
        'the client missed.',
    ),
    alert(
      'ForkwatchServerCursorsIgnored',
      {
        expr: `sum by (${s.by('instance')}) (increase(${s.sel(serverResumes, 'outcome="ignored"')}[10m])) > 0`,
        for: '1m',
        comment: 'Server view, per process: Last-Event-ID ignored because the process has no event store at all.',
      },
      'MCP server ignores resume cursors.',
      '{{ $labels.instance }} ({{ $labels.job }}) ignored the Last-Event-ID of {{ printf "%.0f" $value }} resume(s) ' +
        'in the last 10 minutes; it runs without an event store, so nothing a client missed is replayed.',
    ),
    alert(
      'ForkwatchResumesRejected',
      {
        expr:
          `sum by (${s.by('transport')}) (job:forkwatch_client_resumes:rate5m{outcome="rejected"})\n/\n` +
          `sum by (${s.by('transport')}) (job:forkwatch_client_resumes:rate5m)\n> 0.05\n`,
        for: '15m',
        comment:
          'Unrecoverable gaps, client view: the resume was answered non-2xx, so the events since the cursor are gone\n(loudly).',
      },
      'MCP stream resumes are rejected and their gaps cannot be recovered.',
      '{{ $labels.job }}: {{ $value | humanizePercentage }} of {{ $labels.transport }} resume attempts over the last ' +
        '5 minutes were answered non-2xx; those clients lost the events sent since their Last-Event-ID.',
    ),
    alert(
      'ForkwatchServerResumesRejected',
      { expr: perInstanceShare('rejected'), for: '15m', comment: 'Same, server view per process.' },
      'MCP server rejects resumes and their gaps cannot be recovered.',
      '{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the resumes it served over ' +
        'the last 5 minutes were answered non-2xx; those clients lost the events sent since their Last-Event-ID.',
    ),
    alert(
      'ForkwatchResumeGapSecondsHigh',
      {
        expr: 'histogram_quantile(0.99, job:forkwatch_client_resume_gap_seconds_bucket:rate5m) > 30',
        for: '15m',
        comment: 'Large gaps, client view: time from losing a stream to the first frame of its resume.',
      },
      'MCP clients stay disconnected for long before their streams resume.',
      '{{ $labels.job }}: the p99 time from losing a stream to the first frame of its resume is ' +
        '{{ $value | humanizeDuration }} over the last 5 minutes (threshold 30s).',
    ),
    alert(
      'ForkwatchResumeGapEventsHigh',
      {
        expr: 'histogram_quantile(0.99, job:forkwatch_server_resume_gap_events_bucket:rate5m) > 1000',
        for: '15m',
        comment: 'Large gaps, server view: events replayed per resume.',
      },
      'MCP servers replay very large gaps on resume.',
      '{{ $labels.job }}: the p99 number of events replayed per resume is {{ printf "%.0f" $value }} over the last ' +
        '5 minutes (threshold 1000).',
    ),
    alert(
      'ForkwatchDuplicateDeliveries',
      {
        expr: anyIncrease(METRICS.clientDuplicateEvents.prometheusName, 'transport'),
        for: '1m',
        comment:
          'Frames whose event id the client had already consumed (a replay from the wrong place). Same born-at-1\n' +
          'guard as ForkwatchForksDetected.',
      },
      'MCP clients received events they had already consumed.',
      '{{ $labels.job }}: {{ printf "%.0f" $value }} duplicate {{ $labels.transport }} frame(s) in the last 10 ' +
        'minutes; a resumed stream replayed events the client had already handled.',
    ),
    ...slo.server,
    alert(
      'ForkwatchServerEventsWithoutListener',
      {
        expr:
          `sum by (${s.by('instance')}) (increase(${s.sel(undelivered, 'reason="no_listener"')}[1h]))\n/\n${written}\n` +
          `> ${config.noListenerShare}\nand on (${s.by('instance')})\n${written} >= ${config.noListenerMinEvents}\n`,
        for: '15m',
        comment:
          'Server view, per process: events written for a session stream that no client was listening to on this\n' +
          'process (no GET stream open, or it was on another process). A steady share is a routing or client bug\n' +
          'that may stay under the delivery budget, so it opens a ticket; the traffic floor keeps one event quiet.',
      },
      'MCP server writes events that no client is listening for.',
      `{{ $labels.instance }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of the events it wrote in the ` +
        `last hour had no listening stream on this process (threshold ${config.noListenerShare * 100}%); clients ` +
        'that resume elsewhere or never open the GET stream miss them.',
    ),
    alert(
      'ForkwatchTargetWithoutMetrics',
      {
        expr:
          `(\n  ${s.sel('up')} == 1\n` +
          `  unless on (${s.by('instance')}) group by (${s.by('instance')}) (${s.named('forkwatch_.+')})\n)\n` +
          `and on (${s.by()}) max_over_time(job:forkwatch_series:count[1d])\n`,
        for: '15m',
        comment:
          'A target that is up but exports no forkwatch series, in a job that exported them within the last day\n' +
          '(so node exporters and other jobs are left alone).',
      },
      'A scraped MCP target exports no forkwatch metrics.',
      '{{ $labels.instance }} ({{ $labels.job }}) is up but exports no forkwatch_* series, while its job did within ' +
        'the last day; forks on this target go unseen.',
    ),
    alert(
      'ForkwatchMetricsAbsent',
      {
        expr: `absent(${s.named('forkwatch_.+')})`,
        for: '15m',
        comment: 'No forkwatch series at all in this Prometheus (within the selector).',
      },
      'No forkwatch metrics reach Prometheus.',
      `None of the {{ with query ${JSON.stringify(`count(${s.sel('up')} == 1)`)} }}{{ . | first | value | humanize }}` +
        '{{ else }}0{{ end }} healthy scrape targets of this Prometheus has exported a forkwatch_* series for 15 ' +
        'minutes; fork detection and the resume-loss SLO are blind.',
    ),
  ];
  return [{ name: ALERT_GROUP, rules }];
}
