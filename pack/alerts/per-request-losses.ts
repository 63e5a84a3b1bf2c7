/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Protocol 2026-07-28 losses only one side can count: the client's broken exchanges, re-issues and dropped listen
 * streams (a balancer that keeps the server's socket open hides them from the server), and the server's orphaned
 * tasks. A result the app never got and never asked for again pages; a re-issue (it may have run twice), a dropped
 * listen stream, a long listen gap and an orphaned task open tickets.
 */
import { METRICS } from '../../src/shared/names';
import type { ForkwatchConfig } from '../config/config';
import { scope } from '../config/scope';
import { percent, windowWords } from '../config/units';
import { anyIncrease, defineAlert } from './define';
import { ALERT } from './names';
import { anyIncreaseOf } from './per-request';
import type { RuleSpec } from './rule-model';

/** The client outcomes that had a chance to deliver a result: the app's own cancels and connection failures are out. */
const ANSWERABLE = 'outcome=~"completed|ended_early|broken"';

export function clientResultsLost(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchClientResultsLost;
  const s = scope(config);
  const increase = (series: string) => `sum by (${s.by()}) (increase(${series}[${t.window}]))`;
  const lost = increase(s.sel(METRICS.clientReissues.prometheusName, 'outcome="not_reissued"'));
  const answerable = increase(s.sel(METRICS.clientExchanges.prometheusName, ANSWERABLE));
  return defineAlert(
    config,
    ALERT.clientResultsLost,
    {
      expr: `${lost}\n/\n${answerable}\n> ${t.share}\nand on (${s.by()})\n${answerable} >= ${t.minExchanges}\n`,
      for: t.for,
      labels: { severity: config.severities.page },
      comment:
        'Client view, per job: exchanges that ended early or broke before their terminal response and that the\n' +
        'app did not re-issue within the re-issue window, over the exchanges that could have delivered one. Each is\n' +
        'a result lost to the app (whatever the tool did happened for nobody). Pages: the server cannot count these\n' +
        'behind a balancer that keeps its socket open, so this is the only page for them there.',
    },
    'MCP clients lose tool results: exchanges break and are not re-issued (per-request, 2026-07-28).',
    `{{ $labels.job }}: {{ $value | humanizePercentage }} of the exchanges that could deliver a result in the last ` +
      `${windowWords(t.window)} broke or ended early and were not re-issued (threshold ${percent(t.share)}).`,
  );
}

export function clientExchangesReissued(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchClientExchangesReissued;
  const s = scope(config);
  return defineAlert(
    config,
    ALERT.clientExchangesReissued,
    {
      expr: anyIncreaseOf(s, t.window, s.sel(METRICS.clientReissues.prometheusName, 'outcome="reissued"')),
      for: t.for,
      comment:
        'Client view: the app sent the same request (endpoint, method, name, arguments) again after its exchange\n' +
        'broke. It got its answer, but the first execution may have committed: a ticket, like the server-side\n' +
        'ForkwatchServerDuplicateExecutionRisk, which knows the tool idempotency where the server saw the break.',
    },
    'MCP clients re-issued requests after broken exchanges; the tools may have run twice.',
    `{{ $labels.job }}: {{ printf "%.0f" $value }} exchange(s) re-issued after a break in the last ` +
      `${windowWords(t.window)}; each may have executed twice.`,
  );
}

export function clientListenStreamsDropped(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchClientListenStreamsDropped;
  const s = scope(config);
  const dropped = s.sel(METRICS.clientListenStreams.prometheusName, 'outcome="dropped"');
  return defineAlert(
    config,
    ALERT.clientListenStreamsDropped,
    {
      expr: anyIncreaseOf(s, t.window, dropped),
      for: t.for,
      comment:
        'Client view: subscriptions/listen streams that ended without the server closing them and without the\n' +
        'app cancelling them. Listen streams have no replay: what was published until the re-listen is lost. A\n' +
        'ticket; ForkwatchClientListenGapSecondsHigh says how long the gaps were.',
    },
    'MCP clients lose their listen streams (notifications published meanwhile are lost).',
    `{{ $labels.job }}: {{ printf "%.0f" $value }} subscriptions/listen stream(s) dropped in the last ` +
      `${windowWords(t.window)}.`,
  );
}

export function clientListenGapSecondsHigh(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchClientListenGapSecondsHigh;
  const s = scope(config);
  const buckets = s.sel(`${METRICS.clientListenGapSeconds.prometheusName}_bucket`);
  const p = `p${Number((t.quantile * 100).toPrecision(10))}`;
  return defineAlert(
    config,
    ALERT.clientListenGapSecondsHigh,
    {
      expr: `histogram_quantile(${t.quantile}, sum by (${s.by('le')}) (rate(${buckets}[${t.window}]))) > ${t.seconds}`,
      for: t.for,
      comment: 'Client view: time from a dropped listen stream to the acknowledgement of its re-listen.',
    },
    'MCP clients stay without a listen stream for long after it drops.',
    `{{ $labels.job }}: the ${p} time from a dropped listen stream to its re-listen is ` +
      `{{ $value | humanizeDuration }} over the last ${windowWords(t.window)} (threshold ${t.seconds}s).`,
  );
}

export function serverOrphanedTasks(config: ForkwatchConfig): RuleSpec {
  const t = config.alerts.ForkwatchServerOrphanedTasks;
  const s = scope(config);
  return defineAlert(
    config,
    ALERT.serverOrphanedTasks,
    {
      expr: anyIncrease(s, t.window, METRICS.serverOrphanedTasks.prometheusName, 'instance'),
      for: t.for,
      comment:
        'Server view, per process: tasks (SEP-2663) whose creating response never reached the client. The task\n' +
        'runs for nobody and the client, which never learnt its id, re-issues and creates another. A ticket.',
    },
    'MCP servers create tasks whose clients never learn of them.',
    `{{ $labels.instance }} ({{ $labels.job }}): {{ printf "%.0f" $value }} task(s) orphaned in the last ` +
      `${windowWords(t.window)}: created, but the response naming them never reached the client.`,
  );
}

export function perRequestLossAlerts(config: ForkwatchConfig): RuleSpec[] {
  return [
    clientResultsLost(config),
    clientExchangesReissued(config),
    clientListenStreamsDropped(config),
    clientListenGapSecondsHigh(config),
    serverOrphanedTasks(config),
  ];
}
