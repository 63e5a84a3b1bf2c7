/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Last row of the overview: duplicate deliveries, the firing forkwatch alerts, and what forkwatch instruments. */
import { ALERT } from '../../alerts/names';
import { runbookUrl } from '../../config/links';
import { type Ctx, table, timeseries } from '../panels';

export function duplicateAndAlertPanels(ctx: Ctx) {
  const duplicates = timeseries({
    title: 'Duplicate events (client)',
    description:
      'Frames whose event id the client had already consumed in the session: a replay that went too far back, or ' +
      'a server that restarted its ids. Duplicates are harmless only if the application is idempotent. **Rising ' +
      'with forks:** the same process is replaying a wrong log; otherwise check the event store cursor handling. ' +
      '**Foreign responses:** JSON-RPC responses to a request the client never sent or already got an answer to: ' +
      "a replay of another stream's log (event ids colliding across replicas).",
    unit: 'cps',
    targets: [
      { expr: ctx.q.duplicates, legend: '{{transport}}' },
      { expr: ctx.q.foreignResponses, legend: 'foreign responses {{transport}}' },
    ],
    links: ctx.links([ALERT.duplicateDeliveries]),
    span: 12,
    height: 8,
  });

  const firing = table(
    {
      title: 'Firing alerts and their runbooks',
      description:
        "The `Forkwatch*` alerts firing now (Prometheus `ALERTS` series: needs forkwatch's alert rules loaded in " +
        'this data source). `ForkwatchMetricsAbsent` carries no job, so it shows whatever job is selected. ' +
        '**Click an alert name to open its runbook.**',
      unit: 'short',
      targets: [{ expr: ctx.q.alertsTable }],
      links: ctx.links([]),
      span: 12,
      height: 8,
    },
    ['Time', 'Value', '__name__', 'alertstate'],
  ).overrideByName('alertname', [
    {
      id: 'links',
      value: [
        { title: 'Runbook for ${__value.raw}', url: runbookUrl(ctx.config, '${__value.raw}'), targetBlank: true },
      ],
    },
  ]);

  const instrumented = table(
    {
      title: 'What forkwatch instruments, per process',
      description:
        'One row per MCP SDK class forkwatch patched in each process (`forkwatch_instrumentation_info`), with the ' +
        'route that found it, plus `fetch` for its wire observer once it judged an MCP exchange. A process whose ' +
        'only row says `none` has forkwatch loaded but judging nothing (yet): its counters stay at 0 whatever ' +
        'happens. `unjudged` says its HTTP server answers MCP that no patched transport judges. **A process missing ' +
        'here, or showing only `none` or `unjudged`, is not checked:** see the ForkwatchTargetWithoutMetrics runbook.',
      unit: 'short',
      targets: [{ expr: ctx.q.instrumentation }],
      links: ctx.links([ALERT.targetWithoutMetrics]),
      span: 24,
      height: 8,
    },
    ['Time', 'Value'],
  );

  return [duplicates, firing, instrumented];
}
