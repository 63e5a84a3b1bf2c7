/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Server delivery row: events servers stored or wrote that never reached a live client, by reason. */
import * as common from '@grafana/grafana-foundation-sdk/common';
import { SERVER_UNDELIVERED_REASONS } from '../../../src/shared/names';
import { errorBudget } from '../../config/links';
import { ALERT } from '../../alerts/names';
import { thresholds } from '../common';
import { type Ctx, OUTCOME_COLORS, colorOverrides, table, timeseries } from '../panels';
import { LOSS_WINDOWS } from '../queries';
import { TRACES } from '../trace-searches';

export function serverDeliveryPanels(ctx: Ctx) {
  const reasonColors = Object.fromEntries(SERVER_UNDELIVERED_REASONS.map(r => [r, OUTCOME_COLORS[r] ?? 'text']));
  const byReason = timeseries({
    title: 'Undelivered events by reason',
    description:
      'Events server processes stored or wrote that never reached a client from that process. `stream_moved`: the ' +
      "session's stream went on on another process; `no_listener`: no client stream was open here; `dropped`: the " +
      'transport could not write them; `abandoned`: the client went away for good (not loss, never alerts). ' +
      'With a shared event store (sharedEventStore) the two lines are the fleet balance: events replicas stored ' +
      'and did not replay, against events replays sent that were not pending where they ran; loss is the excess. ' +
      'With fleet delivery marks (fleetDelivery) the `fleet:` lines are the events no replica delivered, each ' +
      'counted once by the replica that claimed it (`fresh_stream`, `session_deleted`, `overdue`): loss. ' +
      '**Red, orange or purple grows:** follow the delivery runbook for that reason; grey alone is clients leaving.',
    unit: 'cps',
    targets: [
      { expr: ctx.q.undeliveredByReason, legend: '{{reason}}' },
      { expr: ctx.q.sharedUnreplayed, legend: 'shared store: stored, not replayed here' },
      { expr: ctx.q.replayedUnpending, legend: 'shared store: replayed, stored elsewhere' },
      { expr: ctx.q.fleetUndeliveredByReason, legend: 'fleet: {{reason}}' },
    ],
    links: ctx.links([ALERT.serverDeliveryBudgetBurn, ALERT.serverEventsWithoutListener], [TRACES.unknownCursors]),
    span: 8,
    height: 8,
  })
    .stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal))
    .fillOpacity(60)
    .overrides(colorOverrides(reasonColors, n => `^${n}$`));

  const budget = errorBudget(ctx.config.serverDeliveryObjective);
  const lossBurn = timeseries({
    title: 'Lost share of events written (SLO windows)',
    description:
      'Share of the events servers wrote that were lost to a live client (stream_moved, no_listener, dropped), per ' +
      'cluster and job, over the windows ForkwatchServerDeliveryBudgetBurn uses (recording rules ' +
      '`job:forkwatch_server_undelivered_loss:ratio_rate*`; the instance filter does not apply). The red line is ' +
      'the error budget. **Short windows above it:** a page follows; long windows above it: a ticket.',
    unit: 'percentunit',
    targets: LOSS_WINDOWS.map(w => ({ expr: ctx.q.deliveryLossRatio(w), legend: ctx.q.lossLegend(w) })),
    links: ctx.links([ALERT.serverDeliveryBudgetBurn]),
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

  const noListener = table(
    {
      title: 'Events without a listener per instance',
      description:
        'For each server process, the share of the events it wrote in the selected range with no client stream ' +
        'open on it. **A high share on some instances:** sessions are not routed back to the process that holds ' +
        'their stream; see the ForkwatchServerEventsWithoutListener runbook.',
      unit: 'percentunit',
      targets: [{ expr: ctx.q.noListenerShare }],
      links: ctx.links([ALERT.serverEventsWithoutListener]),
      span: 8,
      height: 8,
    },
    ['Time'],
  ).sortBy([new common.TableSortByFieldStateBuilder().displayName('Value').desc(true)]);

  return [byReason, lossBurn, noListener];
}
