/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The one composer: the whole pack for one config: rule files, kube-prometheus objects, dashboards, Grafana provisioning, Collector. */
import { stringify } from 'yaml';
import { renderRuleFiles, ruleFiles } from './alerts/rule-files';
import type { ForkwatchConfig } from './config/config';
import { dashboardUrl, runbookUrl, runbooksIndexUrl } from './config/links';
import { renderDashboards } from './dashboards/render';
import { dashboardProvisioning } from './outputs/grafana';
import { podMonitor, prometheusRule } from './outputs/kubernetes';
import { mixinFiles } from './outputs/mixin';
import { collectorConfig, scrapeConfig } from './outputs/otel-collector';
import { openSloDocuments, pyrraObjectives, slothSpec } from './outputs/slo-tools';
import { exporterConfigExample, probeScrapeConfig } from './outputs/probe-exporter';

export const PROBE_SCRAPE_HEADER =
  'Prometheus scrape jobs for forkwatch exporter (blackbox_exporter style): list the MCP endpoints as targets.';

export const yaml = (header: string, value: unknown) => `# ${header}\n${stringify(value, { lineWidth: 0 })}`;

/** Relative path -> file content. */
export function renderPack(config: ForkwatchConfig): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, content] of renderRuleFiles(config)) files.set(`prometheus/${name}`, content);
  const rule = prometheusRule(config);
  files.set(
    'kubernetes/prometheusrule.yaml',
    yaml('forkwatch rules for the prometheus-operator (kube-prometheus).', rule),
  );
  files.set('kubernetes/podmonitor.yaml', yaml('Scrapes the MCP pods that run forkwatch.', podMonitor(config)));
  for (const [name, content] of renderDashboards(config)) files.set(`grafana/dashboards/${name}`, content);
  files.set(
    'grafana/provisioning/dashboards/forkwatch.yaml',
    yaml(
      `Grafana dashboard provisioning: copy grafana/dashboards/*.json to ${config.grafanaDashboardsPath}.`,
      dashboardProvisioning(config),
    ),
  );
  files.set(
    'otel-collector/config.yaml',
    yaml(
      'OpenTelemetry Collector (contrib, for the transform processor): OTLP in, Prometheus out.',
      collectorConfig(config),
    ),
  );
  const scrape = scrapeConfig(config);
  files.set('otel-collector/prometheus-scrape.yaml', yaml('Prometheus scrape job for the Collector.', scrape));
  files.set(
    'sloth/forkwatch.slos.yaml',
    yaml(
      "Sloth (prometheus/v1): `sloth generate -i forkwatch.slos.yaml`. Load these or forkwatch's own burn alerts, not both.",
      slothSpec(config),
    ),
  );
  files.set(
    'pyrra/servicelevelobjectives.yaml',
    pyrraObjectives(config)
      .map(o => yaml('Pyrra ServiceLevelObjective (pyrra.dev/v1alpha1): kubectl apply -f, or pyrra filesystem.', o))
      .join('---\n'),
  );
  files.set(
    'openslo/forkwatch.openslo.yaml',
    openSloDocuments(config)
      .map(d => yaml('OpenSLO v1.', d))
      .join('---\n'),
  );
  for (const [name, content] of mixinFiles(config, renderDashboards(config))) files.set(`mixin/${name}`, content);
  files.set('forkwatch-exporter/prometheus-scrape.yaml', yaml(PROBE_SCRAPE_HEADER, probeScrapeConfig(config)));
  files.set('forkwatch-exporter/config.json', `${JSON.stringify(exporterConfigExample(config), null, 2)}\n`);
  files.set('links.md', links(config));
  return files;
}

function traceSearchLine(config: ForkwatchConfig): string {
  const { backend, target } = config.traceSearch;
  if (backend === 'none') return 'none';
  if (backend === 'jaeger') return `jaeger (${target})`;
  return target === ''
    ? "tempo (the dashboard's Tempo data source variable: a Tempo data source of your Grafana, chosen after import)"
    : `tempo (data source uid ${target})`;
}

function links(config: ForkwatchConfig): string {
  const rules = ruleFiles(config).flatMap(f => f.groups.flatMap(g => g.rules));
  const alerts = [...new Set(rules.flatMap(r => r.alert ?? []))];
  return [
    '# forkwatch pack links',
    '',
    `- Dashboard (every alert's dashboard_url): ${dashboardUrl(config) ?? 'none (set grafanaUrl to link alerts to it)'}`,
    `- Runbooks: ${runbooksIndexUrl(config)}`,
    `- Trace search from panels: ${traceSearchLine(config)}`,
    '',
    '| alert | runbook_url |',
    '|---|---|',
    ...alerts.map(a => `| ${a} | ${runbookUrl(config, a)} |`),
    '',
  ].join('\n');
}
