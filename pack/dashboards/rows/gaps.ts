/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** How long clients were away and how much was skipped or replayed. */
import { ALERT } from '../../alerts/names';
import { type Ctx, heatmap, timeseries } from '../panels';

export function gapPanels(ctx: Ctx) {
  const gapTime = heatmap({
    title: 'Resume gap time (client)',
    description:
      'How long clients were without a stream: from losing it to the first frame of the resumed one, per bucket ' +
      'of the `forkwatch_client_resume_gap_seconds` histogram. Long gaps mean more events to replay and more to ' +
      'lose if the resume forks. **Cells move up:** look at reconnect back-off and at server restarts or load ' +
      'balancer timeouts.',
    unit: 's',
    targets: [{ expr: ctx.q.gapSecondsHeatmap, legend: '{{le}}' }],
    links: ctx.links([ALERT.gapSecondsHigh]),
    span: 8,
    height: 8,
  });

  const skipped = heatmap({
    title: 'Skipped events on resume (client)',
    description:
      'Event ids missing between the resume cursor and the first frame, for servers with dense sequence ids ' +
      '(0 = contiguous). Anything above 0 is loss that still looks like a resume. **Cells above 0:** the event ' +
      'store dropped or evicted events; check its retention against the gap time on the left.',
    unit: 'short',
    targets: [{ expr: ctx.q.skippedHeatmap, legend: '{{le}}' }],
    links: ctx.links([]),
    span: 8,
    height: 8,
  });

  const replaySize = timeseries({
    title: 'Server replay size',
    description:
      'Events a server replayed per resume (`forkwatch_server_resume_gap_events`): the exact size of the gaps it ' +
      'filled. Large replays are slow and need a long-lived event store. **p99 grows:** clients stay away longer ' +
      'or streams are busier; size the store retention for it.',
    unit: 'short',
    targets: [
      { expr: ctx.q.replayQuantile(0.5), legend: 'p50' },
      { expr: ctx.q.replayQuantile(0.99), legend: 'p99' },
      { expr: ctx.q.replayMean, legend: 'mean' },
    ],
    links: ctx.links([ALERT.gapEventsHigh]),
    span: 8,
    height: 8,
  });

  return [gapTime, skipped, replaySize];
}
