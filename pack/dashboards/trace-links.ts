/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Links from a panel to the traces behind it: forkwatch's resume spans, searched by their attributes (src/shared/names.ts)
 * in Tempo (Grafana Explore, TraceQL) or Jaeger (its search page). The time range is the dashboard's.
 */
import type { TraceSearch } from '../config/config';

/** The Tempo data source the trace links open in Explore, when the config pins none (traceSearch.target ''). */
export const TEMPO_DATASOURCE_VARIABLE = 'tempo_datasource';

export interface TraceSearchSpec {
  title: string;
  /** Span name. */
  span: string;
  /** Span attributes that must be equal. */
  attributes: Record<string, string>;
}

/** `{ name = "…" && span.attr = "…" }` */
export function traceQL(spec: TraceSearchSpec): string {
  const conditions = [
    `name = ${JSON.stringify(spec.span)}`,
    ...Object.entries(spec.attributes).map(([k, v]) => `span.${k} = ${JSON.stringify(v)}`),
  ];
  return `{ ${conditions.join(' && ')} }`;
}

/** Grafana interpolates `${__from}`, `${__to}` and the data source variable only when they are not percent-encoded. */
const keepGrafanaVariables = (url: string) =>
  url.replace(new RegExp(`%24%7B(__from|__to|${TEMPO_DATASOURCE_VARIABLE})%7D`, 'g'), '${$1}');

export function traceSearchUrl(config: TraceSearch, spec: TraceSearchSpec): string | undefined {
  if (config.backend === 'none') return undefined;
  if (config.backend === 'tempo') {
    // No uid pinned: the dashboard's Tempo data source variable, which Grafana sets to a data source uid it has.
    const uid = config.target === '' ? `\${${TEMPO_DATASOURCE_VARIABLE}}` : config.target;
    const datasource = { type: 'tempo', uid };
    const panes = {
      traces: {
        datasource: uid,
        queries: [{ refId: 'A', datasource, queryType: 'traceql', query: traceQL(spec), limit: 20 }],
        range: { from: '${__from}', to: '${__to}' },
      },
    };
    return keepGrafanaVariables(`/explore?schemaVersion=1&orgId=1&panes=${encodeURIComponent(JSON.stringify(panes))}`);
  }
  // Jaeger's search page takes microseconds; Grafana's ${__from} is milliseconds.
  const params = [
    `service=${encodeURIComponent(config.service)}`,
    `operation=${encodeURIComponent(spec.span)}`,
    `tags=${encodeURIComponent(JSON.stringify(spec.attributes))}`,
    'start=${__from}000',
    'end=${__to}000',
    'limit=20',
  ];
  return `${config.target.replace(/\/$/, '')}/search?${params.join('&')}`;
}
