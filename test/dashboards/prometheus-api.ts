/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The Prometheus HTTP API calls Grafana makes for a dashboard — instant and range queries, label values — on top of
 * test/support/prometheus.ts. Results keep every sample, so "no data" can be told apart from "0".
 */
import type { PrometheusInstance } from '../support/prometheus';

export interface Series {
  metric: Record<string, string>;
  /** [unix seconds, value as text] pairs; one for an instant query. */
  values: Array<[number, string]>;
}

type Api = PrometheusInstance['api'];

const params = (p: Record<string, string | number | undefined>) =>
  new URLSearchParams(Object.entries(p).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));

export async function instantQuery(api: Api, expr: string, time: number): Promise<Series[]> {
  const data = await api<{ resultType: string; result: unknown }>(`query?${params({ query: expr, time })}`);
  if (data.resultType === 'scalar') return [{ metric: {}, values: [data.result as [number, string]] }];
  return (data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map(r => ({
    metric: r.metric,
    values: [r.value],
  }));
}

export async function rangeQuery(api: Api, expr: string, start: number, end: number, step: number): Promise<Series[]> {
  const data = await api<{ result: Series[] }>(`query_range?${params({ query: expr, start, end, step })}`);
  return data.result;
}

/** Grafana's label_values(selector, label): GET /api/v1/label/<label>/values?match[]=<selector>. */
export function labelValues(api: Api, label: string, selector: string | undefined, start: number, end: number) {
  return api<string[]>(`label/${encodeURIComponent(label)}/values?${params({ 'match[]': selector, start, end })}`);
}

/** True when a result holds at least one sample that is a number (not NaN or ±Inf from an empty ratio). */
export const hasData = (series: Series[]) => series.some(s => s.values.some(([, v]) => Number.isFinite(Number(v))));
