/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Panel links to the traces behind a panel, for each trace backend the config offers. */
import { describe, expect, test } from 'vitest';
import { resolveConfig } from '../../pack/config/resolve';
import { renderDashboards } from '../../pack/dashboards/render';
import { traceQL, traceSearchUrl } from '../../pack/dashboards/trace-links';
import { TRACES } from '../../pack/dashboards/trace-searches';
import { ATTR, SPAN } from '../../src/shared/names';
import { panelsOf } from './dashboard-model';

const traceLinksOf = (config: ReturnType<typeof resolveConfig>) => {
  const dashboard = JSON.parse([...renderDashboards(config).values()][0] ?? '{}');
  return panelsOf(dashboard).flatMap(p =>
    (p.links ?? []).filter(l => l.title?.startsWith('Traces:')).map(l => l.url ?? ''),
  );
};

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
