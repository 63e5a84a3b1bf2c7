/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Server-side row of the overview: which process forks sessions. */
import * as common from '@grafana/grafana-foundation-sdk/common';
import { ALERT } from '../../alerts/names';
import { type Ctx, OUTCOME_COLORS, colorOverrides, table, timeseries } from '../panels';
import { TRACES } from '../trace-searches';

export function serverPanels(ctx: Ctx) {
  const perInstance = timeseries({
    title: 'Server resume outcomes per instance',
    description:
      'Resumes (GET with Last-Event-ID) each server process handled, by outcome. `unknown_cursor`: the process had ' +
      'no event log for the cursor, so it served a fresh stream — **this is the process that forks sessions**. ' +
      '`ignored`: it had no event store at all. **One instance with unknown cursors:** it does not share the event ' +
      'store or sticky routing sends sessions to it; drain it or fix routing.',
    unit: 'reqps',
    targets: [{ expr: ctx.q.serverOutcomes, legend: '{{instance}} {{outcome}}' }],
    links: ctx.links(
      [ALERT.serverUnknownCursors, ALERT.serverCursorsIgnored, ALERT.serverResumesRejected],
      [TRACES.unknownCursors],
    ),
    span: 12,
    height: 8,
  }).overrides(colorOverrides(OUTCOME_COLORS, n => `.* ${n}$`));

  const unknownShare = table(
    {
      title: 'Unknown-cursor share per instance',
      description:
        'For each server process, the share of its resumes in the selected range that carried a cursor it had no ' +
        'log for. **The top row is where sessions fork.** A share near 100 % on one instance: it is outside the ' +
        'shared event store or not behind sticky routing.',
      unit: 'percentunit',
      targets: [{ expr: ctx.q.unknownCursorShare }],
      links: ctx.links([ALERT.serverUnknownCursors], [TRACES.unknownCursors]),
      span: 6,
      height: 8,
    },
    ['Time'],
  ).sortBy([new common.TableSortByFieldStateBuilder().displayName('Value').desc(true)]);

  const events = timeseries({
    title: 'Server events per instance',
    description:
      'Events each server process stored in its event store or sent on an SSE stream: the traffic a fork can lose. ' +
      '**Use it to size the impact:** forks on a busy instance lose more events per fork. An instance that is up ' +
      'but missing here exports no forkwatch metrics: its forks go unseen.',
    unit: 'cps',
    targets: [{ expr: ctx.q.serverEvents, legend: '{{instance}}' }],
    links: ctx.links([ALERT.targetWithoutMetrics]),
    span: 6,
    height: 8,
  });

  return [perInstance, unknownShare, events];
}
