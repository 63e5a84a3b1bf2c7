/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Panel links to the traces behind a panel, for each trace backend the config offers. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { resolveConfig } from '../../pack/config/resolve';
import { renderDashboards } from '../../pack/dashboards/render';
import { traceQL, traceSearchUrl } from '../../pack/dashboards/trace-links';
import { TRACES } from '../../pack/dashboards/trace-searches';
import { ATTR, SPAN } from '../../src/shared/names';
import { type Dashboard, panelsOf } from './dashboard-model';
import { type GrafanaDatasource, interpolateLink, resolveDatasourceVariables } from './grafana-variables';
import { lintDashboard, loadExclusions } from './linter';

const dashboardOf = (config: ReturnType<typeof resolveConfig>): Dashboard =>
  JSON.parse([...renderDashboards(config).values()][0] ?? '{}');
const traceLinksOf = (config: ReturnType<typeof resolveConfig>) =>
  panelsOf(dashboardOf(config)).flatMap(p =>
    (p.links ?? []).filter(l => l.title?.startsWith('Traces:')).map(l => l.url ?? ''),
  );
/** The Explore state a Tempo link opens: its `panes` parameter. */
const panesOf = (url: string) => JSON.parse(decodeURIComponent(url.split('panes=')[1] ?? ''));

describe('trace links', () => {
  test('the searches use forkwatch span and attribute names from src/shared/names.ts', () => {
    expect(traceQL(TRACES.forkedResumes)).toBe(`{ name = "${SPAN.clientResume}" && span.${ATTR.verdict} = "forked" }`);
    expect(traceQL(TRACES.unknownCursors)).toBe(
      `{ name = "${SPAN.serverResume}" && span.${ATTR.serverOutcome} = "unknown_cursor" }`,
    );
  });

  test('Jaeger: its search page by service, operation and tags, over the dashboard range in microseconds', () => {
    const url = traceSearchUrl(
      { backend: 'jaeger', target: 'https://jaeger.example.org/', service: 'mcp-gateway' },
      TRACES.forkedResumes,
    );
    expect(url).toBe(
      'https://jaeger.example.org/search?service=mcp-gateway&operation=forkwatch.client.resume' +
        `&tags=${encodeURIComponent('{"forkwatch.resume.verdict":"forked"}')}&start=\${__from}000&end=\${__to}000&limit=20`,
    );
    const links = traceLinksOf(
      resolveConfig({ traceSearch: { backend: 'jaeger', target: 'https://jaeger.example.org', service: 'mcp' } }),
    );
    expect(links.length).toBeGreaterThanOrEqual(6);
    for (const l of links) expect(l).toMatch(/^https:\/\/jaeger\.example\.org\/search\?service=mcp&/);
  });

  test('Tempo: Grafana Explore on the configured data source; none: no trace links at all', () => {
    const links = traceLinksOf(resolveConfig({ traceSearch: { backend: 'tempo', target: 'my-tempo' } }));
    expect(links.length).toBeGreaterThanOrEqual(6);
    for (const l of links)
      expect(JSON.parse(decodeURIComponent(l.split('panes=')[1] ?? '')).traces.datasource).toBe('my-tempo');
    expect(traceLinksOf(resolveConfig({ traceSearch: { backend: 'none' } }))).toEqual([]);
  });
});

describe('trace links that work right after import (issue 51)', () => {
  const committed = JSON.parse(readFileSync(join(__dirname, '../../dashboards/forkwatch-overview.json'), 'utf8'));
  /** A Grafana whose Tempo data source has a uid of its own, as provisioning or the UI gives it: not "tempo". */
  const GRAFANA: GrafanaDatasource[] = [
    { name: 'Loki', uid: 'P8E80F9AEF21F6940', type: 'loki' },
    { name: 'Mimir', uid: 'PAE45454D0EDB9216', type: 'prometheus' },
    { name: 'Tempo (prod)', uid: 'P214B5B846CF3925F', type: 'tempo' },
    { name: 'Tempo (staging)', uid: 'P5A0D9F3E7C6B4A21', type: 'tempo' },
  ];

  test('the defaults: a Tempo data source variable, with no current value, that every trace link opens', () => {
    expect(DEFAULT_CONFIG.traceSearch).toEqual({ backend: 'tempo', target: '', service: '' });
    const dashboard = dashboardOf(DEFAULT_CONFIG);
    expect(dashboard).toEqual(committed);
    const variable = dashboard.templating?.list?.find(v => v.name === 'tempo_datasource');
    expect(variable).toMatchObject({ type: 'datasource', query: 'tempo', label: 'Tempo data source' });
    expect((variable as { current?: unknown }).current).toBeUndefined();
    const links = traceLinksOf(DEFAULT_CONFIG);
    expect(links.length).toBeGreaterThanOrEqual(6);
    for (const link of links) {
      // Kept raw for Grafana to interpolate; no data source uid is assumed.
      expect(link).toContain('%22${tempo_datasource}%22');
      const panes = panesOf(link);
      expect(panes.traces.datasource).toBe('${tempo_datasource}');
      expect(panes.traces.queries[0].datasource).toEqual({ type: 'tempo', uid: '${tempo_datasource}' });
    }
    expect(JSON.stringify(committed)).not.toMatch(/"uid":"tempo"|%22uid%22%3A%22tempo%22|datasource%22%3A%22tempo%22/);
  });

  test("imported into a Grafana whose Tempo has its own uid, a trace link opens that Tempo's Explore", () => {
    const values = resolveDatasourceVariables(committed, GRAFANA);
    expect(values).toEqual({ prometheus_datasource: 'PAE45454D0EDB9216', tempo_datasource: 'P214B5B846CF3925F' });
    for (const link of traceLinksOf(DEFAULT_CONFIG)) {
      const opened = interpolateLink(link, { ...values, __from: '1700000000000', __to: '1700003600000' });
      expect(opened).toMatch(/^\/explore\?schemaVersion=1&orgId=1&panes=/);
      expect(opened).not.toContain('$');
      const panes = panesOf(opened);
      expect(panes.traces.datasource).toBe('P214B5B846CF3925F');
      expect(panes.traces.queries[0]).toMatchObject({
        datasource: { type: 'tempo', uid: 'P214B5B846CF3925F' },
        queryType: 'traceql',
      });
      expect(panes.traces.range).toEqual({ from: '1700000000000', to: '1700003600000' });
    }
    // A Grafana without Tempo leaves the variable empty: the links say so instead of naming another uid.
    expect(
      resolveDatasourceVariables(
        committed,
        GRAFANA.filter(d => d.type !== 'tempo'),
      ).tempo_datasource,
    ).toBe(undefined);
  });

  test('a pinned uid, Jaeger or none: no Tempo variable, and the dashboard stays lint-clean each way', () => {
    const configs = {
      pinned: resolveConfig({ traceSearch: { target: 'my-tempo' } }),
      jaeger: resolveConfig({ traceSearch: { backend: 'jaeger', target: 'https://jaeger.example.org' } }),
      none: resolveConfig({ traceSearch: { backend: 'none' } }),
      defaults: DEFAULT_CONFIG,
    };
    for (const [name, config] of Object.entries(configs)) {
      const dashboard = dashboardOf(config);
      const variables = (dashboard.templating?.list ?? []).filter(v => v.type === 'datasource').map(v => v.name);
      expect(variables, name).toEqual(
        name === 'defaults' ? ['prometheus_datasource', 'tempo_datasource'] : ['prometheus_datasource'],
      );
      expect(lintDashboard(dashboard, loadExclusions()), name).toEqual([]);
    }
    for (const link of traceLinksOf(configs.pinned)) expect(panesOf(link).traces.datasource).toBe('my-tempo');
  });

  test('Jaeger needs its UI URL: a config without one is refused', () => {
    expect(() => resolveConfig({ traceSearch: { backend: 'jaeger' } })).toThrow(
      /traceSearch\.target: the Jaeger UI's base URL/,
    );
  });
});
