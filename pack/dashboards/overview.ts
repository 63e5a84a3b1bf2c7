/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * "Forkwatch / Overview": the on-call dashboard for silently forked MCP sessions — resumes answered 2xx from an
 * event log that does not continue the session's, so events are lost while HTTP dashboards show success.
 */
import type * as cog from '@grafana/grafana-foundation-sdk/cog';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { type ForkwatchConfig, DEFAULT_CONFIG } from '../config/config';
import { runbooksIndexUrl } from '../config/links';
import { DATASOURCE, variables } from './common';
import { type Ctx, context, row } from './panels';
import { queries } from './queries';
import { forkPanels, lossVersusHttpPanels } from './rows/client-loss';
import { duplicateAndAlertPanels } from './rows/duplicates-and-alerts';
import { evidencePanels } from './rows/evidence';
import { gapPanels } from './rows/gaps';
import { perRequestPanels } from './rows/per-request';
import { revivedPanels } from './rows/revived';
import { probePanels } from './rows/probe';
import { serverDeliveryPanels } from './rows/server-delivery';
import { serverPanels } from './rows/servers';
import { summaryPanels } from './rows/summary';

export const OVERVIEW_UID = 'forkwatch-overview';
export const OVERVIEW_TITLE = 'Forkwatch / Overview';

type PanelBuilder = cog.Builder<dashboard.Panel> & { id(id: number): cog.Builder<dashboard.Panel> };

const ROWS: Array<[string, (ctx: Ctx) => PanelBuilder[]]> = [
  ['Are sessions losing events?', summaryPanels],
  ['Proven loss beside exposure', evidencePanels],
  ['Forks', forkPanels],
  ['What HTTP dashboards do not show', lossVersusHttpPanels],
  ['Gaps and replays', gapPanels],
  ['Which process forks sessions', serverPanels],
  ['Server delivery', serverDeliveryPanels],
  ['Revived sessions and reconnect storms', revivedPanels],
  ['Per-request (2026-07-28)', perRequestPanels],
  ['Duplicates and alerts', duplicateAndAlertPanels],
  ['The probe (forkwatch exporter)', probePanels],
];

export function overviewDashboard(config: ForkwatchConfig = DEFAULT_CONFIG): dashboard.DashboardBuilder {
  const ctx = context(config, queries(config));
  const builder = new dashboard.DashboardBuilder(OVERVIEW_TITLE)
    .uid(config.dashboardUid)
    .description('Silently forked MCP sessions: resumes answered 2xx from an event log that lost the session events.')
    .tags(['forkwatch', 'mcp', 'opentelemetry'])
    .readonly()
    .timezone('browser')
    .time({ from: 'now-6h', to: 'now' })
    .refresh('1m')
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .variables(variables(config))
    .link(
      new dashboard.DashboardLinkBuilder('Forkwatch runbooks')
        .type(dashboard.DashboardLinkType.Link)
        .url(runbooksIndexUrl(config))
        .icon('doc')
        .targetBlank(true),
    )
    .annotation(
      new dashboard.AnnotationQueryBuilder()
        .name('Forkwatch alerts')
        .datasource(DATASOURCE)
        .enable(true)
        .iconColor('red')
        .expr(ctx.q.alertsTable)
        .titleFormat('{{alertname}}')
        .textFormat(`{{${config.clusterLabel}}} {{job}} {{instance}} {{reason}}`)
        .step('1m'),
    );
  let id = 1;
  for (const [title, panels] of ROWS) {
    builder.withRow(row(title).id(id++));
    for (const panel of panels(ctx)) builder.withPanel(panel.id(id++));
  }
  return builder;
}
