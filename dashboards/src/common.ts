/**
 * Building blocks shared by forkwatch's dashboards: the templated data source, the label variables every query
 * filters on, PromQL selector helpers and the runbook links.
 */
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';

/** Every panel, target, variable and annotation reads from the data source the user picks. */
export const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

export const RUNBOOKS_INDEX = 'https://github.com/forkwatch/forkwatch/tree/main/alerts/runbooks';
export const runbookUrl = (alertName: string) =>
  `https://github.com/forkwatch/forkwatch/blob/main/alerts/runbooks/${alertName}.md`;

/** The series a variable's values are read from: every process that runs forkwatch exports one of these. */
const RESUME_SERIES = '{__name__=~"forkwatch_(client|server)_resumes_total"';

/**
 * Label variables, in the order they filter. `job` and `instance` match only series that carry the label (`.+`, as
 * dashboard-linter asks); `cluster` and `namespace` exist only in some setups, so "All" must also match series
 * without them (`.*`).
 */
export const LABEL_VARIABLES = [
  { name: 'cluster', label: 'Cluster', allValue: '.*', filterBy: [] },
  { name: 'namespace', label: 'Namespace', allValue: '.*', filterBy: ['cluster'] },
  { name: 'job', label: 'Job', allValue: '.+', filterBy: ['cluster', 'namespace'] },
  { name: 'instance', label: 'Instance', allValue: '.+', filterBy: ['cluster', 'namespace', 'job'] },
] as const;

export type LabelVariable = (typeof LABEL_VARIABLES)[number]['name'];

/** `job=~"$job", instance=~"$instance", …` for the given labels. */
export function matchers(labels: readonly LabelVariable[]): string {
  return labels.map(l => `${l}=~"$${l}"`).join(', ');
}

/** Matchers for raw forkwatch series, which carry every label the scrape gives them. */
export const RAW = matchers(['cluster', 'namespace', 'job', 'instance']);
/** Matchers for `job:` recording rules: they keep `job` and nothing else of the scrape labels. */
export const PER_JOB = matchers(['job']);

export function variables(): Array<dashboard.DatasourceVariableBuilder | dashboard.QueryVariableBuilder> {
  const datasource = new dashboard.DatasourceVariableBuilder('datasource').label('Data source').type('prometheus');
  const labels = LABEL_VARIABLES.map(v => {
    const filter = v.filterBy.length > 0 ? `, ${matchers(v.filterBy)}` : '';
    const query = `label_values(${RESUME_SERIES}${filter}}, ${v.name})`;
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
  return [datasource, ...labels];
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

/** Panel links: the runbooks of the alerts a panel explains, then the runbook index. */
export function runbookLinks(alertNames: readonly string[]): dashboard.DashboardLinkBuilder[] {
  const specific = alertNames.map(name =>
    new dashboard.DashboardLinkBuilder(`Runbook: ${name}`).url(runbookUrl(name)).targetBlank(true),
  );
  const index = new dashboard.DashboardLinkBuilder('All forkwatch runbooks').url(RUNBOOKS_INDEX).targetBlank(true);
  return [...specific, index];
}
