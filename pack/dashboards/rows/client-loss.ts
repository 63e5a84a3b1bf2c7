/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Client-side rows of the overview: forks, and the loss that HTTP dashboards do not show. */
import * as common from '@grafana/grafana-foundation-sdk/common';
import { errorBudget } from '../../config/links';
import { ALERT } from '../../alerts/names';
import { thresholds } from '../common';
import { type Ctx, OUTCOME_COLORS, colorOverrides, timeseries } from '../panels';
import { LOSS_WINDOWS } from '../queries';
import { TRACES } from '../trace-searches';

export function forkPanels(ctx: Ctx) {
  const forkRate = timeseries({
    title: 'Fork rate by reason and transport',
    description:
      'Forked resumes per second. `stream_changed`: the first frame came from another stream or log (resume served ' +
      'by another process); `id_regressed` / `id_reused`: the log started again or replayed old events (server ' +
      'restarted or lost its store); `id_missing`: frames without ids; `cursor_dropped`: the client reconnected ' +
      'without sending Last-Event-ID. **Any fork:** follow the runbook for the reason shown.',
    unit: 'cps',
    targets: [{ expr: ctx.q.forkRate, legend: '{{reason}} ({{transport}})' }],
    links: ctx.links([ALERT.forksDetected], [TRACES.forkedResumes]),
    span: 12,
    height: 8,
  });

  const outcomeShare = timeseries({
    title: 'Resume outcomes (share of all resumes)',
    description:
      'Every resume attempt by verdict, as a share of all attempts. `resumed` is the only lossless one; `forked` ' +
      'lost events behind a 2xx; `inconclusive` got 2xx but no frame in time; `rejected` got a non-2xx; `failed` ' +
      'never got a response. **Red or yellow band grows:** see the fork panels; orange or purple: an HTTP or ' +
      'network problem that HTTP dashboards show as well.',
    unit: 'percentunit',
    targets: [{ expr: ctx.q.outcomeShare, legend: '{{outcome}}' }],
    links: ctx.links([ALERT.forksDetected, ALERT.lossBudgetBurn, ALERT.resumesRejected]),
    span: 12,
    height: 8,
  })
    .max(1)
    .stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal))
    .fillOpacity(60)
    .overrides(colorOverrides(OUTCOME_COLORS, n => `^${n}$`));

  return [forkRate, outcomeShare];
}

export function lossVersusHttpPanels(ctx: Ctx) {
  const twoXxVersusLossless = timeseries({
    title: '2xx resumes vs lossless resumes',
    description:
      'Upper line: resumes the server answered 2xx — all an HTTP dashboard sees (less `unverified` ones, which the ' +
      'SLO leaves out). Lower line: the resumes that ' +
      'really continued the session event log. **The shaded gap between them is the loss HTTP dashboards hide.** ' +
      'A gap that does not close: find the forking process in "Server resume outcomes per instance".',
    unit: 'reqps',
    targets: [
      { expr: ctx.q.twoXxResumes, legend: '2xx resumes' },
      { expr: ctx.q.losslessResumes, legend: 'lossless resumes' },
    ],
    links: ctx.links([ALERT.lossBudgetBurn]),
    span: 8,
    height: 8,
  })
    .fillOpacity(0)
    .overrides([
      {
        matcher: { id: 'byName', options: '2xx resumes' },
        properties: [
          { id: 'color', value: { mode: 'fixed', fixedColor: 'orange' } },
          { id: 'custom.fillBelowTo', value: 'lossless resumes' },
          { id: 'custom.fillOpacity', value: 30 },
        ],
      },
      {
        matcher: { id: 'byName', options: 'lossless resumes' },
        properties: [{ id: 'color', value: { mode: 'fixed', fixedColor: 'green' } }],
      },
    ]);

  const lossBurn = timeseries({
    title: 'Lossy share of 2xx resumes (SLO windows)',
    description:
      'Share of 2xx resumes that lost events, per job, over the windows the loss-budget alerts use (recording ' +
      `rules \`job:forkwatch_client_resume_loss:ratio_rate*\`, loaded with forkwatch's rules; per cluster and job, so ` +
      'the instance filter does not apply). The red line is the error budget. **Short windows above the line:** the ' +
      'budget burns fast, the page alert follows; long windows above it: a slow leak, ticket.',
    unit: 'percentunit',
    targets: LOSS_WINDOWS.map(w => ({ expr: ctx.q.lossRatio(w), legend: ctx.q.lossLegend(w) })),
    links: ctx.links([ALERT.lossBudgetBurn]),
    span: 8,
    height: 8,
  })
    .thresholds(
      thresholds([
        [null, 'green'],
        [errorBudget(ctx.config.clientResumeObjective), 'red'],
      ]),
    )
    .thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Line));

  const unverified = timeseries({
    title: 'Unverified share of 2xx resumes',
    description:
      "Resumes answered 2xx whose event ids cannot prove continuity (the SDK's shared standalone stream key, " +
      'opaque ids): neither lossless nor forked, so the SLO leaves them out of both sides. A large share means ' +
      'the SLO sees little of the traffic. **Share grows:** use ids that carry the stream and a sequence (see the ' +
      'README codecs), or add an event store whose ids forkwatch can read.',
    unit: 'percentunit',
    targets: [{ expr: ctx.q.unverifiedShare, legend: ctx.q.lossLegend('').trim() }],
    links: ctx.links([ALERT.lossBudgetBurn]),
    span: 8,
    height: 8,
  }).max(1);

  return [twoXxVersusLossless, lossBurn, unverified];
}
