/**
 * "Forkwatch / Overview": the on-call dashboard for silently forked MCP sessions — resumes answered 2xx from an
 * event log that does not continue the session's, so events are lost while HTTP dashboards show success.
 */
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { DATASOURCE, RUNBOOKS_INDEX, runbookUrl, thresholds, variables } from './common';
import { heatmap, row, stat, table, timeseries } from './panels';
import { LOSS_WINDOWS, Q } from './queries';
import { ALERT, LOSS_BUDGET } from './alert-names';

export const OVERVIEW_UID = 'forkwatch-overview';
export const OVERVIEW_TITLE = 'Forkwatch / Overview';

const OUTCOME_COLORS: Record<string, string> = {
  resumed: 'green',
  forked: 'red',
  inconclusive: 'yellow',
  rejected: 'orange',
  failed: 'purple',
  replayed: 'green',
  unknown_cursor: 'red',
  ignored: 'yellow',
};

const colorOverrides = (byName: Record<string, string>, pattern: (name: string) => string) =>
  Object.entries(byName).map(([name, color]) => ({
    matcher: { id: 'byRegexp', options: pattern(name) },
    properties: [{ id: 'color', value: { mode: 'fixed', fixedColor: color } }],
  }));

function lossPanels() {
  const forksInRange = stat({
    title: 'Forked resumes',
    description:
      'Resumes in the selected range whose first frame did not continue the session event log: the server answered ' +
      '2xx, the client lost events. **Not 0:** open "Fork rate by reason" to see why, then "Server resume outcomes ' +
      'per instance" to find the process that served the wrong log, and follow the runbook.',
    unit: 'short',
    targets: [{ expr: Q.forksInRange }],
    alerts: [ALERT.forksDetected],
    span: 6,
    height: 4,
  }).thresholds(thresholds([[null, 'green'], [1, 'red']]));

  const losslessShare = stat({
    title: 'Lossless share of 2xx resumes',
    description:
      'Of the resumes the server answered 2xx (what an HTTP dashboard counts as success), the share that really ' +
      'continued the event log. **Below 100 %:** that is the loss HTTP dashboards hide; compare with the SLO ' +
      'panel and follow the loss-budget runbook.',
    unit: 'percentunit',
    targets: [{ expr: Q.losslessShareInRange }],
    alerts: [ALERT.lossBudgetBurn],
    span: 6,
    height: 4,
  }).thresholds(thresholds([[null, 'red'], [0.99, 'orange'], [1 - LOSS_BUDGET, 'green']]));

  const unknownCursors = stat({
    title: 'Unknown cursors on servers',
    description:
      'Resumes in the selected range that reached a server process with no event log for the cursor — a session ' +
      'resumed on the wrong process. **Not 0:** check sticky routing / shared event store; "Unknown-cursor share ' +
      'per instance" shows which process.',
    unit: 'short',
    targets: [{ expr: Q.unknownCursorsInRange }],
    alerts: [ALERT.serverUnknownCursors],
    span: 6,
    height: 4,
  }).thresholds(thresholds([[null, 'green'], [1, 'red']]));

  const alertsFiring = stat({
    title: 'Forkwatch alerts firing',
    description:
      'Number of `Forkwatch*` alerts firing now for the selected jobs. **Not 0:** the table "Firing alerts ' +
      'and their runbooks" at the bottom lists them.',
    unit: 'short',
    targets: [{ expr: Q.alertsFiring }],
    alerts: [],
    span: 6,
    height: 4,
  }).thresholds(thresholds([[null, 'green'], [1, 'red']]));

  return [forksInRange, losslessShare, unknownCursors, alertsFiring];
}

function forkPanels() {
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

function lossVersusHttpPanels() {
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

function gapPanels() {
  const gapTime = heatmap({
    title: 'Resume gap time (client)',
    description:
      'How long clients were without a stream: from losing it to the first frame of the resumed one, per bucket ' +
      'of the `forkwatch_client_resume_gap_seconds` histogram. Long gaps mean more events to replay and more to ' +
      'lose if the resume forks. **Cells move up:** look at reconnect back-off and at server restarts or load ' +
      'balancer timeouts.',
    unit: 's',
    targets: [{ expr: Q.gapSecondsHeatmap, legend: '{{le}}' }],
    alerts: [ALERT.gapSecondsHigh],
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
    targets: [{ expr: Q.skippedHeatmap, legend: '{{le}}' }],
    alerts: [],
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
      { expr: Q.replayQuantile(0.5), legend: 'p50' },
      { expr: Q.replayQuantile(0.99), legend: 'p99' },
      { expr: Q.replayMean, legend: 'mean' },
    ],
    alerts: [ALERT.gapEventsHigh],
    span: 8,
    height: 8,
  });

  return [gapTime, skipped, replaySize];
}

function serverPanels() {
  const perInstance = timeseries({
    title: 'Server resume outcomes per instance',
    description:
      'Resumes (GET with Last-Event-ID) each server process handled, by outcome. `unknown_cursor`: the process had ' +
      'no event log for the cursor, so it served a fresh stream — **this is the process that forks sessions**. ' +
      '`ignored`: it had no event store at all. **One instance with unknown cursors:** it does not share the event ' +
      'store or sticky routing sends sessions to it; drain it or fix routing.',
    unit: 'reqps',
    targets: [{ expr: Q.serverOutcomes, legend: '{{instance}} {{outcome}}' }],
    alerts: [ALERT.serverUnknownCursors, ALERT.serverCursorsIgnored, ALERT.serverResumesRejected],
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
      targets: [{ expr: Q.unknownCursorShare }],
      alerts: [ALERT.serverUnknownCursors],
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
    targets: [{ expr: Q.serverEvents, legend: '{{instance}}' }],
    alerts: [ALERT.targetWithoutMetrics],
    span: 6,
    height: 8,
  });

  return [perInstance, unknownShare, events];
}

function duplicateAndAlertPanels() {
  const duplicates = timeseries({
    title: 'Duplicate events (client)',
    description:
      'Frames whose event id the client had already consumed in the session: a replay that went too far back, or ' +
      'a server that restarted its ids. Duplicates are harmless only if the application is idempotent. **Rising ' +
      'with forks:** the same process is replaying a wrong log; otherwise check the event store cursor handling.',
    unit: 'cps',
    targets: [{ expr: Q.duplicates, legend: '{{transport}}' }],
    alerts: [ALERT.duplicateDeliveries],
    span: 12,
    height: 8,
  });

  const firing = table(
    {
      title: 'Firing alerts and their runbooks',
      description:
        'The `Forkwatch*` alerts firing now (Prometheus `ALERTS` series: needs forkwatch\'s alert rules loaded in ' +
        'this data source). `ForkwatchMetricsAbsent` carries no job, so it shows whatever job is selected. ' +
        '**Click an alert name to open its runbook.**',
      unit: 'short',
      targets: [{ expr: Q.alertsTable }],
      alerts: [],
      span: 12,
      height: 8,
    },
    ['Time', 'Value', '__name__', 'alertstate'],
  ).overrideByName('alertname', [
    { id: 'links', value: [{ title: 'Runbook for ${__value.raw}', url: runbookUrl('${__value.raw}'), targetBlank: true }] },
  ]);

  return [duplicates, firing];
}

const ROWS: Array<[string, () => Array<{ build(): unknown }>]> = [
  ['Are sessions losing events?', lossPanels],
  ['Forks', forkPanels],
  ['What HTTP dashboards do not show', lossVersusHttpPanels],
  ['Gaps and replays', gapPanels],
  ['Which process forks sessions', serverPanels],
  ['Duplicates and alerts', duplicateAndAlertPanels],
];

export function overviewDashboard(): dashboard.DashboardBuilder {
  const builder = new dashboard.DashboardBuilder(OVERVIEW_TITLE)
    .uid(OVERVIEW_UID)
    .description('Silently forked MCP sessions: resumes answered 2xx from an event log that lost the session events.')
    .tags(['forkwatch', 'mcp', 'opentelemetry'])
    .readonly()
    .timezone('browser')
    .time({ from: 'now-6h', to: 'now' })
    .refresh('1m')
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .variables(variables())
    .link(
      new dashboard.DashboardLinkBuilder('Forkwatch runbooks')
        .type(dashboard.DashboardLinkType.Link)
        .url(RUNBOOKS_INDEX)
        .icon('doc')
        .targetBlank(true),
    )
    .annotation(
      new dashboard.AnnotationQueryBuilder()
        .name('Forkwatch alerts')
        .datasource(DATASOURCE)
        .enable(true)
        .iconColor('red')
        .expr(Q.alertsTable)
        .titleFormat('{{alertname}}')
        .textFormat('{{job}} {{instance}} {{reason}}')
        .step('1m'),
    );
  let id = 1;
  for (const [title, panels] of ROWS) {
    builder.withRow(row(title).id(id++));
    for (const panel of panels()) builder.withPanel((panel as ReturnType<typeof stat>).id(id++));
  }
  return builder;
}
