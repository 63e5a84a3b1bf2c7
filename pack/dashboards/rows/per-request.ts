/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Per-request row (protocol 2026-07-28, no sessions): how server exchanges end, results produced after the client
 * left against the delivered-results SLO, probable re-issues and notifications published with no listen stream.
 */
import * as common from '@grafana/grafana-foundation-sdk/common';
import { METRICS } from '../../../src/shared/names';
import { RESULT_LOSS_RATIO } from '../../alerts/per-request';
import { ALERT } from '../../alerts/names';
import { errorBudget } from '../../config/links';
import { scopeMatchers, thresholds } from '../common';
import { type Ctx, timeseries } from '../panels';
import { LOSS_WINDOWS } from '../queries';

export function perRequestPanels(ctx: Ctx) {
  const { raw, perJob } = scopeMatchers(ctx.config);
  const rate = (metric: string) => `rate(${metric}{${raw}}[$__rate_interval])`;
  const exchanges = timeseries({
    title: 'Per-request exchanges and late messages',
    description:
      'Protocol 2026-07-28 exchanges (one request, one HTTP response) by how they ended: `delivered` with their ' +
      'terminal response, `closed_before_response` (the 499s) or `closed_mid_stream`; and what handlers produced ' +
      'after their exchange had closed (`late result`, `late error`, `late notification`: dropped by the SDK). ' +
      '**Late results grow:** clients leave before slow tools finish; see the delivered-results runbook.',
    unit: 'reqps',
    targets: [
      { expr: `sum by (outcome) (${rate(METRICS.serverExchanges.prometheusName)})`, legend: '{{outcome}}' },
      { expr: `sum by (kind) (${rate(METRICS.serverLateMessages.prometheusName)})`, legend: 'late {{kind}}' },
    ],
    links: ctx.links([ALERT.serverResultDeliveryBudgetBurn]),
    span: 8,
    height: 8,
  });

  const budget = errorBudget(ctx.config.serverResultObjective);
  const lossBurn = timeseries({
    title: 'Results lost after the client left (SLO windows)',
    description:
      'Share of the exchanges clients asked for that broke and were asked for again (probable re-issues, in either ' +
      'order; an app cancel or a client that died is on neither side), per cluster and job, over the windows ' +
      'ForkwatchServerResultDeliveryBudgetBurn uses (recording rules ' +
      '`job:forkwatch_server_result_loss:ratio_rate*`). The red line is the error budget. **Short windows above ' +
      'it:** a page follows; long windows above it: a ticket.',
    unit: 'percentunit',
    targets: LOSS_WINDOWS.map(w => ({ expr: `${RESULT_LOSS_RATIO(w)}{${perJob}}`, legend: ctx.q.lossLegend(w) })),
    links: ctx.links([ALERT.serverResultDeliveryBudgetBurn]),
    span: 8,
    height: 8,
  })
    .thresholds(
      thresholds([
        [null, 'green'],
        [budget, 'red'],
      ]),
    )
    .thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Line));

  const risks = timeseries({
    title: 'Probable re-issues and publishes without a listener',
    description:
      'Requests re-issued after a broken exchange (same principal, method, name and arguments; MRTR retries ' +
      'excluded) by the idempotency the server declared: `not_idempotent` may have executed twice; `after cancel`: ' +
      'a like request after a break whose handler honoured the cancel (it may have committed first; no alert reads ' +
      'it, since an app that cancels and calls again looks the same). And event-bus ' +
      'publishes with no listen stream on the publishing process (lost: listen streams have no replay). **Either ' +
      'grows:** follow ForkwatchServerDuplicateExecutionRisk or ForkwatchServerPublishesWithoutListener.',
    unit: 'reqps',
    targets: [
      {
        expr: `sum by (idempotency) (${rate(METRICS.serverProbableReissues.prometheusName)})`,
        legend: 're-issue {{idempotency}}',
      },
      {
        expr: `sum by (idempotency) (${rate(METRICS.serverReissuesAfterHonouredCancel.prometheusName)})`,
        legend: 'after cancel {{idempotency}}',
      },
      {
        expr: `sum by (outcome) (${rate(METRICS.serverListenPublishes.prometheusName)})`,
        legend: 'publish {{outcome}}',
      },
    ],
    links: ctx.links([ALERT.serverDuplicateExecutionRisk, ALERT.serverPublishesWithoutListener]),
    span: 8,
    height: 8,
  });
  const tasks = timeseries({
    title: 'Tasks orphaned and tasks/get misses',
    description:
      'Tasks (SEP-2663, app-level: the 2.x SDK has no task runtime) whose creating response never reached the ' +
      'client (`orphaned`: the task runs, the client never learns its id, a re-issue creates another), and ' +
      '`tasks/get` answered "not found": `expired` for a task this process created, `unknown` for one it never ' +
      'created (a balancer that ignores `Mcp-Name`, or a stale id). **Unknown grows on some instances:** route ' +
      'tasks/get by Mcp-Name to the replica that holds the task.',
    unit: 'reqps',
    targets: [
      { expr: `sum(${rate(METRICS.serverOrphanedTasks.prometheusName)})`, legend: 'orphaned' },
      {
        expr: `sum by (reason) (${rate(METRICS.serverTaskMisses.prometheusName)})`,
        legend: 'tasks/get miss {{reason}}',
      },
    ],
    links: ctx.links([ALERT.serverResultDeliveryBudgetBurn, ALERT.serverOrphanedTasks]),
    span: 12,
    height: 8,
  });

  const client = timeseries({
    title: 'Client view: exchanges, re-issues and listen streams',
    description:
      'What 2026-07-28 clients instrumented by forkwatch saw: exchanges by how their response ended (`ended_early` ' +
      'and `broken` lose the request: the app must re-issue it), whether the app re-issued those within the window, ' +
      'and how listen streams ended (`dropped`: notifications are lost until the next acknowledgement). **Broken ' +
      'without re-issue:** the app silently drops requests (no SDK re-issues for it); ForkwatchClientResultsLost ' +
      'pages on it.',
    unit: 'reqps',
    targets: [
      { expr: `sum by (outcome) (${rate(METRICS.clientExchanges.prometheusName)})`, legend: 'exchange {{outcome}}' },
      { expr: `sum by (outcome) (${rate(METRICS.clientReissues.prometheusName)})`, legend: '{{outcome}}' },
      {
        expr: `sum by (outcome) (${rate(METRICS.clientListenStreams.prometheusName)})`,
        legend: 'listen {{outcome}}',
      },
    ],
    links: ctx.links([
      ALERT.serverResultDeliveryBudgetBurn,
      ALERT.serverPublishesWithoutListener,
      ALERT.clientResultsLost,
      ALERT.clientExchangesReissued,
      ALERT.clientListenStreamsDropped,
      ALERT.clientListenGapSecondsHigh,
    ]),
    span: 12,
    height: 8,
  });
  return [exchanges, lossBurn, risks, tasks, client];
}
