/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Panel factories: each sets what every forkwatch panel must have (title, description, unit, the templated data
 * source, runbook links, stable refIds) so overview.ts only says what differs.
 */
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { PanelBuilder as HeatmapBuilder, YAxisConfigBuilder } from '@grafana/grafana-foundation-sdk/heatmap';
import { PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as TableBuilder } from '@grafana/grafana-foundation-sdk/table';
import { PanelBuilder as TimeseriesBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import type { ForkwatchConfig } from '../config/config';
import { DATASOURCE, panelLinks, query } from './common';
import type { Queries } from './queries';
import type { TraceSearchSpec } from './trace-links';

/** What every row gets: the config, its queries, and the panel links it implies. */
export interface Ctx {
  config: ForkwatchConfig;
  q: Queries;
  links(alerts: readonly string[], traces?: readonly TraceSearchSpec[]): dashboard.DashboardLinkBuilder[];
}

export function context(config: ForkwatchConfig, q: Queries): Ctx {
  return { config, q, links: (alerts, traces) => panelLinks(config, alerts, traces) };
}

export interface Target {
  expr: string;
  legend?: string;
}

export interface PanelSpec {
  title: string;
  /** What the panel means, then what on-call does about it (Markdown). */
  description: string;
  /** A Grafana unit id (see dashboard-linter's panel-units-rule list). */
  unit: string;
  targets: readonly Target[];
  /** Trace searches, runbooks of the alerts that explain this panel, the runbook index (Ctx.links). */
  links: dashboard.DashboardLinkBuilder[];
  span: number;
  height: number;
}

export const OUTCOME_COLORS: Record<string, string> = {
  resumed: 'green',
  forked: 'red',
  inconclusive: 'yellow',
  rejected: 'orange',
  failed: 'purple',
  replayed: 'green',
  unknown_cursor: 'red',
  ignored: 'yellow',
  unverified: 'blue',
  stream_moved: 'red',
  no_listener: 'orange',
  dropped: 'purple',
  abandoned: 'text',
};

/** Fixed colours for series whose name matches `pattern(outcome)`. */
export const colorOverrides = (byName: Record<string, string>, pattern: (name: string) => string) =>
  Object.entries(byName).map(([name, color]) => ({
    matcher: { id: 'byRegexp', options: pattern(name) },
    properties: [{ id: 'color', value: { mode: 'fixed', fixedColor: color } }],
  }));

const REF_IDS = 'ABCDEFGHIJ';

function targets(spec: PanelSpec) {
  return spec.targets.map((t, i) => query(t.expr, t.legend).refId(REF_IDS[i] ?? `Q${i}`));
}

export function timeseries(spec: PanelSpec): TimeseriesBuilder {
  return new TimeseriesBuilder()
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .min(0)
    .links(spec.links)
    .targets(targets(spec))
    .legend(
      new common.VizLegendOptionsBuilder()
        .showLegend(true)
        .displayMode(common.LegendDisplayMode.Table)
        .placement(common.LegendPlacement.Bottom)
        .calcs(['lastNotNull', 'max']),
    )
    .tooltip(
      new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Multi).sort(common.SortOrder.Descending),
    )
    .span(spec.span)
    .height(spec.height);
}

/** A single number over the whole time range (instant query). */
export function stat(spec: PanelSpec): StatBuilder {
  return new StatBuilder()
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .links(spec.links)
    .targets(targets(spec).map(t => t.instant()))
    .colorMode(common.BigValueColorMode.Background)
    .graphMode(common.BigValueGraphMode.None)
    .reduceOptions(new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false))
    .span(spec.span)
    .height(spec.height);
}

/** A classic Prometheus histogram drawn as Grafana's own buckets (no re-bucketing: calculate=false). */
export function heatmap(spec: PanelSpec): HeatmapBuilder {
  return new HeatmapBuilder()
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .links(spec.links)
    .targets(targets(spec).map(t => t.format(PromQueryFormat.Heatmap)))
    .calculate(false)
    .yAxis(new YAxisConfigBuilder().unit(spec.unit).axisLabel(spec.unit === 's' ? 'gap' : 'events'))
    .cellGap(1)
    .showLegend()
    .span(spec.span)
    .height(spec.height);
}

/** Instant query as rows: one row per series, labels as columns. */
export function table(spec: PanelSpec, hiddenColumns: readonly string[]): TableBuilder {
  return new TableBuilder()
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .links(spec.links)
    .targets(targets(spec).map(t => t.instant().format(PromQueryFormat.Table)))
    .withTransformation({
      id: 'organize',
      options: { excludeByName: Object.fromEntries(hiddenColumns.map(c => [c, true])) },
    })
    .span(spec.span)
    .height(spec.height);
}

export function row(title: string): dashboard.RowBuilder {
  return new dashboard.RowBuilder(title);
}
