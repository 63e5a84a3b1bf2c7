/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What Grafana's Prometheus data source does to a query before sending it: resolve the label variables with
 * label_values() against the data source, then interpolate them and the interval macros.
 */
import type { Dashboard, Variable } from './dashboard-model';
import { analyseLabelValues } from './promql';

/** Chosen values per variable; 'All' means the variable's allValue. */
export type Selection = Record<string, string[] | 'All'>;

export interface Macros {
  /** `$__rate_interval`, e.g. '15s'. */
  rateInterval: string;
  /** `$__interval`, the step. */
  interval: string;
  /** `$__range`, the dashboard's time range. */
  range: string;
}

/**
 * Grafana's prometheusSpecialRegexEscape: regex metacharacters get a backslash, written doubled because the value
 * lands inside a PromQL string literal.
 */
const regexEscape = (value: string) => value.replace(/\\/g, '\\\\\\\\').replace(/[$^*{}[\]'+?.()|]/g, '\\\\$&');

function formatValue(variable: Variable, chosen: string[] | 'All'): string {
  if (chosen === 'All') return variable.allValue ?? '.*';
  const escaped = chosen.map(regexEscape);
  return escaped.length === 1 ? (escaped[0] as string) : `(${escaped.join('|')})`;
}

export function interpolate(expr: string, d: Dashboard, selection: Selection, macros: Macros): string {
  const variables = new Map((d.templating?.list ?? []).map(v => [v.name, v]));
  return expr.replace(/\$\{?(\w+)\}?/g, (whole, name: string) => {
    if (name === '__rate_interval') return macros.rateInterval;
    if (name === '__interval') return macros.interval;
    if (name === '__range') return macros.range;
    const variable = variables.get(name);
    const chosen = selection[name];
    if (!variable || variable.type === 'datasource' || chosen === undefined) return whole;
    return formatValue(variable, chosen);
  });
}

/** Resolves label variables in dashboard order, each seeing the ones before it, as Grafana chains them. */
export async function resolveVariables(
  d: Dashboard,
  labelValues: (label: string, selector: string | undefined) => Promise<string[]>,
  pick: (name: string, values: string[]) => string[] | 'All',
  macros: Macros,
): Promise<{ selection: Selection; options: Record<string, string[]> }> {
  const selection: Selection = {};
  const options: Record<string, string[]> = {};
  for (const v of (d.templating?.list ?? []).filter(x => x.type === 'query')) {
    const parsed = analyseLabelValues(interpolate(v.query ?? '', d, selection, macros));
    if ('error' in parsed) throw new Error(`variable ${v.name}: ${parsed.error}`);
    const values = await labelValues(parsed.label, parsed.selector?.expr);
    options[v.name] = values;
    selection[v.name] = values.length === 0 ? 'All' : pick(v.name, values);
  }
  return { selection, options };
}

/** A data source of a Grafana instance, as its data source list holds it. */
export interface GrafanaDatasource {
  name: string;
  uid: string;
  /** The plugin id: prometheus, tempo, … */
  type: string;
}

/**
 * What Grafana sets each data source variable to when a dashboard is imported with no `current` value (Scenes'
 * DataSourceVariable): its options are the instance's data sources of the variable's plugin type, each valued by
 * its uid, and with no current value the first option is taken. undefined when the instance has none of that type.
 */
export function resolveDatasourceVariables(
  d: Dashboard,
  datasources: readonly GrafanaDatasource[],
): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const v of (d.templating?.list ?? []).filter(x => x.type === 'datasource')) {
    const current = (v as { current?: { value?: string } }).current?.value;
    const options = datasources.filter(ds => ds.type === v.query).map(ds => ds.uid);
    out[v.name] = current && options.includes(current) ? current : options[0];
  }
  return out;
}

/**
 * A panel link's URL as Grafana opens it: `${name}` and `$name` of the dashboard's variables (and the time range's
 * `${__from}`, `${__to}`) replaced by their values; anything else left as written.
 */
export function interpolateLink(url: string, values: Record<string, string | undefined>): string {
  return url.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced?: string, bare?: string) => {
    const value = values[(braced ?? bare) as string];
    return value === undefined ? whole : value;
  });
}
