/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The pack's outputs for each stack (pack/compose.ts): kube-prometheus objects validated against the
 * prometheus-operator CRD schemas (the validators @kubernetes-models/prometheus-operator compiles from them with Ajv)
 * and their rule groups checked by promtool; Grafana provisioning; the Collector config, whose metric names are
 * derived with the port of prometheus/otlptranslator and must be the names the rules and dashboards read.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { parse, stringify } from 'yaml';
import { describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { resolveConfig } from '../../pack/config/resolve';
import { renderPack } from '../../pack/compose';
import { METRIC_SPECS } from '../../src/shared/names';
import { queriesOf } from '../dashboards/dashboard-model';
import { analyse } from '../dashboards/promql';
import { collectorName } from '../register/otlp-translator';
import { BIN, runTool } from '../support/prometheus';
import { analyzePromQL } from '../support/promql';

const TWO_CLUSTERS = resolveConfig({
  selector: 'job=~"mcp-.*"',
  aggregationLabels: ['k8s_cluster', 'namespace'],
  clusterLabel: 'k8s_cluster',
  kubernetes: { namespace: 'observability' },
  otelCollector: { resourceAttributes: { k8s_cluster: 'k8s.cluster.name', namespace: 'k8s.namespace.name' } },
});
const CONFIGS = [
  ['defaults', DEFAULT_CONFIG],
  ['a two-cluster user config', TWO_CLUSTERS],
] as const;

const file = (config: typeof DEFAULT_CONFIG, name: string) => {
  const content = renderPack(config).get(name);
  if (content === undefined) throw new Error(`no ${name} in the pack`);
  return content;
};

describe.each(CONFIGS)('kube-prometheus objects (%s)', (_, config) => {
  const rule = parse(file(config, 'kubernetes/prometheusrule.yaml'));
  const monitor = parse(file(config, 'kubernetes/podmonitor.yaml'));

  test('the PrometheusRule and the PodMonitor validate against the CRD schemas', () => {
    expect(() => new PrometheusRule(rule).validate()).not.toThrow();
    expect(() => new PodMonitor(monitor).validate()).not.toThrow();
    expect(rule.metadata.namespace).toBe(config.kubernetes.namespace);
  });

  test('the validators reject what the API server would (so passing means something)', () => {
    const badFor = structuredClone(rule);
    badFor.spec.groups[1].rules[0].for = '5 minutes';
    expect(() => new PrometheusRule(badFor).validate()).toThrow(/for/);
    const noName = structuredClone(rule);
    delete noName.spec.groups[0].name;
    expect(() => new PrometheusRule(noName).validate()).toThrow(/name/);
    const noSelector = structuredClone(monitor);
    delete noSelector.spec.selector;
    expect(() => new PodMonitor(noSelector).validate()).toThrow(/selector/);
  });

  test('its rule groups are the rule files, and promtool accepts them', async () => {
    const plain = [...renderPack(config)]
      .filter(([n]) => n.startsWith('prometheus/'))
      .flatMap(([, c]) => parse(c).groups);
    expect(rule.spec.groups).toEqual(plain);
    const dir = await mkdtemp(join(tmpdir(), 'forkwatch-crd-'));
    try {
      await writeFile(join(dir, 'groups.yml'), stringify({ groups: rule.spec.groups }));
      const res = await runTool(BIN.promtool, ['check', 'rules', join(dir, 'groups.yml')]);
      expect(res.code, res.stdout + res.stderr).toBe(0);
      expect(res.stdout).toMatch(/SUCCESS: \d+ rules found/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('Grafana provisioning', () => {
  test('one file provider reading the dashboards the pack writes', () => {
    const provisioning = parse(file(TWO_CLUSTERS, 'grafana/provisioning/dashboards/forkwatch.yaml'));
    expect(provisioning.apiVersion).toBe(1);
    expect(provisioning.providers).toEqual([
      expect.objectContaining({
        type: 'file',
        options: expect.objectContaining({ path: TWO_CLUSTERS.grafanaDashboardsPath }),
      }),
    ]);
    const dashboard = JSON.parse(file(TWO_CLUSTERS, `grafana/dashboards/${TWO_CLUSTERS.dashboardUid}.json`));
    expect(dashboard.uid).toBe(TWO_CLUSTERS.dashboardUid);
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toEqual([
      'prometheus_datasource',
      'tempo_datasource',
      'k8s_cluster',
      'namespace',
      'job',
      'instance',
    ]);
  });
});

describe('the OpenTelemetry Collector config', () => {
  const collector = parse(file(TWO_CLUSTERS, 'otel-collector/config.yaml'));

  test('OTLP in, the prometheus exporter out, through the transform that copies the aggregation labels', () => {
    expect(Object.keys(collector.receivers)).toEqual(['otlp']);
    expect(collector.service.pipelines.metrics).toEqual({
      receivers: ['otlp'],
      processors: ['transform/forkwatch', 'batch'],
      exporters: ['prometheus'],
    });
    const statements: string[] = collector.processors['transform/forkwatch'].metric_statements[0].statements;
    expect(statements).toEqual([
      'set(datapoint.attributes["k8s_cluster"], resource.attributes["k8s.cluster.name"]) where resource.attributes["k8s.cluster.name"] != nil',
      'set(datapoint.attributes["namespace"], resource.attributes["k8s.namespace.name"]) where resource.attributes["k8s.namespace.name"] != nil',
    ]);
    expect(parse(file(TWO_CLUSTERS, 'otel-collector/prometheus-scrape.yaml')).scrape_configs[0].honor_labels).toBe(
      true,
    );
  });

  test('every forkwatch series the rules and the dashboard read is a name the Collector exports', () => {
    const collectorSeries = new Set(
      METRIC_SPECS.flatMap(spec => {
        const name = collectorName(
          spec.otelName,
          spec.unit,
          spec.kind === 'counter' ? 'monotonic_counter' : spec.kind === 'gauge' ? 'gauge' : 'histogram',
        );
        return spec.kind === 'histogram' ? ['_bucket', '_sum', '_count'].map(s => name + s) : [name];
      }),
    );
    const pack = renderPack(TWO_CLUSTERS);
    const ruleExprs = [...pack]
      .filter(([n]) => n.startsWith('prometheus/'))
      .flatMap(([, c]) => (parse(c).groups as { rules: { expr: string }[] }[]).flatMap(g => g.rules.map(r => r.expr)));
    const fromRules = ruleExprs.flatMap(e => analyzePromQL(e).selectors.flatMap(s => s.name ?? []));
    const dashboard = JSON.parse(pack.get(`grafana/dashboards/${TWO_CLUSTERS.dashboardUid}.json`) ?? '{}');
    const fromDashboard = queriesOf(dashboard).flatMap(q => analyse(q.expr).selectors.flatMap(s => s.metric ?? []));
    // The probe's series come from forkwatch exporter (or a textfile), never through the Collector.
    const viaCollector = (n: string) =>
      n.startsWith('forkwatch_') && !n.startsWith('forkwatch_probe_') && !n.startsWith('forkwatch_exporter_');
    const read = new Set([...fromRules, ...fromDashboard].filter(viaCollector));
    expect(read.size).toBeGreaterThan(8);
    for (const name of read) expect(collectorSeries, name).toContain(name);
  });
});

describe('npm run pack', () => {
  test('renders every output from a TypeScript config file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'forkwatch-pack-'));
    try {
      await writeFile(
        join(dir, 'forkwatch.config.ts'),
        "export default { aggregationLabels: ['region'], clusterLabel: 'region', grafanaUrl: 'https://g.example.org' };\n",
      );
      const out = join(dir, 'out');
      const res = await runTool(
        process.execPath,
        ['node_modules/tsx/dist/cli.mjs', 'pack/render.ts', '--config', join(dir, 'forkwatch.config.ts'), '--out', out],
        {
          cwd: join(__dirname, '../..'),
        },
      );
      expect(res.code, res.stdout + res.stderr).toBe(0);
      expect(res.stdout.match(/^wrote /gm)).toHaveLength(renderPack(DEFAULT_CONFIG).size);
      const alerts = await readFile(join(out, 'prometheus/forkwatch-alerts.rules.yml'), 'utf8');
      expect(alerts).toContain('sum by (region, job, transport, reason)');
      expect(alerts).toContain('dashboard_url: https://g.example.org/d/forkwatch-overview/forkwatch-overview');
      expect(await readFile(join(out, 'links.md'), 'utf8')).toContain('| ForkwatchServerDeliveryBudgetBurn |');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
