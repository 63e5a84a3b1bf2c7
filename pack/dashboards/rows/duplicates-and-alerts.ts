/** Last row of the overview: duplicate deliveries and the firing forkwatch alerts. */
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

  return [duplicates, firing];
}
