/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Building blocks shared by forkwatch's dashboards, from the pack's config (pack/config/config.ts): the templated data
 * source, the label variables every query filters on, PromQL selector helpers, the runbook and trace links.
 */
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import type { ForkwatchConfig } from '../config/config';
import { runbookUrl, runbooksIndexUrl } from '../config/links';
import { TEMPO_DATASOURCE_VARIABLE, type TraceSearchSpec, traceSearchUrl } from './trace-links';

/**
 * Every panel, target, variable and annotation reads from the Prometheus data source the user picks. The variable is
 * named after its type, as dashboard-linter's template-datasource-rule asks of a dashboard with two data source
 * variables (the second: the Tempo data source of the trace links, TEMPO_DATASOURCE_VARIABLE).
 */
export const DATASOURCE_VARIABLE = 'prometheus_datasource';
export const DATASOURCE = { type: 'prometheus', uid: `\${${DATASOURCE_VARIABLE}}` };

/** The series a variable's values are read from: every process that runs forkwatch exports one of these. */
const RESUME_SERIES = '__name__=~"forkwatch_(client|server)_resumes_total"';

export interface LabelVariable {
  name: string;
  label: string;
  allValue: string;
  filterBy: string[];
}

/**
 * Label variables, in the order they filter: the config's aggregation labels (cluster first), then job and instance.
 * `job` and `instance` match only series that carry the label (`.+`, as dashboard-linter asks); cluster-like labels
 * exist only in some setups, so "All" must also match series without them (`.*`).
 */
export function labelVariables(config: ForkwatchConfig): LabelVariable[] {
  const rest = config.aggregationLabels.filter(l => l !== config.clusterLabel);
  const aggregation = config.aggregationLabels.length > 0 ? [config.clusterLabel, ...rest] : [];
  const names = [...aggregation, 'job', 'instance'];
  return names.map((name, i) => ({
    name,
    label: name === config.clusterLabel ? 'Cluster' : name[0]!.toUpperCase() + name.slice(1).replace(/_/g, ' '),
    allValue: aggregation.includes(name) ? '.*' : '.+',
    filterBy: names.slice(0, i),
  }));
}

/** `job=~"$job", instance=~"$instance", …` for the given labels. */
export function matchers(labels: readonly string[]): string {
  return labels.map(l => `${l}=~"$${l}"`).join(', ');
}

export interface Matchers {
  /** For raw forkwatch series, which carry every label the scrape gives them (and the config's selector). */
  raw: string;
  /** For `job:` recording rules: they keep the aggregation labels and `job`. */
  perJob: string;
  /** For `job_instance:` recording rules. */
  perInstance: string;
}

export function scopeMatchers(config: ForkwatchConfig): Matchers {
  const vars = labelVariables(config).map(v => v.name);
  const perJob = matchers(vars.filter(v => v !== 'instance'));
  return {
    raw: [config.selector.trim(), matchers(vars)].filter(Boolean).join(', '),
    perJob,
    perInstance: matchers(vars),
  };
}

export function variables(
  config: ForkwatchConfig,
): Array<dashboard.DatasourceVariableBuilder | dashboard.QueryVariableBuilder> {
  const datasource = new dashboard.DatasourceVariableBuilder(DATASOURCE_VARIABLE)
    .label('Prometheus data source')
    .type('prometheus');
  // No `current`: after import Grafana picks a Tempo data source of the instance (the first), whatever its uid.
  const { backend, target } = config.traceSearch;
  const tempo =
    backend === 'tempo' && target === ''
      ? [new dashboard.DatasourceVariableBuilder(TEMPO_DATASOURCE_VARIABLE).label('Tempo data source').type('tempo')]
      : [];
  const labels = labelVariables(config).map(v => {
    const filter = [RESUME_SERIES, config.selector.trim(), matchers(v.filterBy)].filter(Boolean).join(', ');
    const query = `label_values({${filter}}, ${v.name})`;
    return new dashboard.QueryVariableBuilder(v.name)
      .label(v.label)
      .datasource(DATASOURCE)
      .query(query)
      .definition(query)
      .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
      .sort(dashboard.VariableSort.AlphabeticalAsc)
      .multi(true)
      .includeAll(true)
      .allValue(v.allValue)
      .current({ text: 'All', value: '$__all' });
  });
  return [datasource, ...tempo, ...labels];
}

/** One Prometheus target; refIds are set by the panel helper so the JSON stays stable. */
export function query(expr: string, legend = '__auto'): DataqueryBuilder {
  return new DataqueryBuilder().datasource(DATASOURCE).expr(expr).legendFormat(legend);
}

export function thresholds(steps: Array<[number | null, string]>): dashboard.ThresholdsConfigBuilder {
  return new dashboard.ThresholdsConfigBuilder()
    .mode(dashboard.ThresholdsMode.Absolute)
    .steps(steps.map(([value, color]) => ({ value, color })));
}

/** Panel links: the traces behind the panel (if a trace backend is configured), the runbooks, the runbook index. */
export function panelLinks(
  config: ForkwatchConfig,
  alertNames: readonly string[],
  traces: readonly TraceSearchSpec[] = [],
): dashboard.DashboardLinkBuilder[] {
  const traceLinks = traces.flatMap(t => {
    const url = traceSearchUrl(config.traceSearch, t);
    return url ? [new dashboard.DashboardLinkBuilder(`Traces: ${t.title}`).url(url).targetBlank(true)] : [];
  });
  const specific = alertNames.map(name =>
    new dashboard.DashboardLinkBuilder(`Runbook: ${name}`).url(runbookUrl(config, name)).targetBlank(true),
  );
  const index = new dashboard.DashboardLinkBuilder('All forkwatch runbooks')
    .url(runbooksIndexUrl(config))
    .targetBlank(true);
  return [...traceLinks, ...specific, index];
}
