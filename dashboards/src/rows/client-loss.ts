/** Client-side rows of the overview: forks, and the loss that HTTP dashboards do not show. */
import * as common from '@grafana/grafana-foundation-sdk/common';
import { ALERT, LOSS_BUDGET } from '../alert-names';
import { thresholds } from '../common';
import { OUTCOME_COLORS, colorOverrides, timeseries } from '../panels';
import { LOSS_WINDOWS, Q } from '../queries';

export function forkPanels() {
  const forkRate = timeseries({
    title: 'Fork rate by reason and transport',
    description:
      'Forked resumes per second. `stream_changed`: the first frame came from another stream or log (resume served ' +
      'by another process); `id_regressed` / `id_reused`: the log started again or replayed old events (server ' +
      'restarted or lost its store); `id_missing`: frames without ids; `cursor_dropped`: the client reconnected ' +
      'without sending Last-Event-ID. **Any fork:** follow the runbook for the reason shown.',
    unit: 'cps',
    targets: [{ expr: Q.forkRate, legend: '{{reason}} ({{transport}})' }],
    alerts: [ALERT.forksDetected],
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
    targets: [{ expr: Q.outcomeShare, legend: '{{outcome}}' }],
    alerts: [ALERT.forksDetected, ALERT.lossBudgetBurn, ALERT.resumesRejected],
    span: 12,
    height: 8,
  })
    .max(1)
    .stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal))
    .fillOpacity(60)
    .overrides(colorOverrides(OUTCOME_COLORS, n => `^${n}$`));

  return [forkRate, outcomeShare];
}

export function lossVersusHttpPanels() {
  const twoXxVersusLossless = timeseries({
    title: '2xx resumes vs lossless resumes',
    description:
      'Upper line: resumes the server answered 2xx — all an HTTP dashboard sees. Lower line: the resumes that ' +
      'really continued the session event log. **The shaded gap between them is the loss HTTP dashboards hide.** ' +
      'A gap that does not close: find the forking process in "Server resume outcomes per instance".',
    unit: 'reqps',
    targets: [
      { expr: Q.twoXxResumes, legend: '2xx resumes' },
      { expr: Q.losslessResumes, legend: 'lossless resumes' },
    ],
    alerts: [ALERT.lossBudgetBurn],
    span: 12,
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
      `rules \`job:forkwatch_client_resume_loss:ratio_rate*\`, loaded with forkwatch's rules; per job, so the ` +
      'instance filter does not apply). The red line is the error budget. **Short windows above the line:** the ' +
      'budget burns fast, the page alert follows; long windows above it: a slow leak, ticket.',
    unit: 'percentunit',
    targets: LOSS_WINDOWS.map(w => ({ expr: Q.lossRatio(w), legend: `{{job}} ${w}` })),
    alerts: [ALERT.lossBudgetBurn],
    span: 12,
    height: 8,
  })
    .thresholds(thresholds([[null, 'green'], [LOSS_BUDGET, 'red']]))
    .thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Line));

  return [twoXxVersusLossless, lossBurn];
}
