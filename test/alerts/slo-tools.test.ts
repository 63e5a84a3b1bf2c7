/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The SLO-tool outputs of the pack (pack/outputs/slo-tools.ts, pack/outputs/mixin.ts), each checked by what consumes
 * it where it runs here, otherwise by its project's published spec:
 *  - the jsonnet mixin, compiled with Debian's jsonnet: exactly the rendered rule groups and dashboards, and the
 *    `_config` overrides a mixin user makes reach the alerts;
 *  - Sloth's prometheus/v1 spec (pkg/prometheus/api/v1 of slok/sloth), Pyrra's ServiceLevelObjective
 *    (pyrra.dev/v1alpha1, config/crd/bases of pyrra-dev/pyrra) and OpenSLO v1 (the OpenSLO README): schemas written
 *    from those specs, queries parsed as PromQL, and the same bad and total events as forkwatch's own SLI records.
 * Neither Sloth nor Pyrra is packaged for npm or Debian, so their generators do not run here.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Ajv from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, test } from 'vitest';
import { CLIENT_LOSS_RATIO, SERVER_LOSS_RATIO } from '../../pack/alerts/slo';
import { plainGroups, ruleFiles } from '../../pack/alerts/rule-files';
import { renderPack } from '../../pack/compose';
import { DEFAULT_CONFIG, type ForkwatchConfig } from '../../pack/config/config';
import { resolveConfig } from '../../pack/config/resolve';
import { renderDashboards } from '../../pack/dashboards/render';
import { analyzePromQL } from '../support/promql';

const JSONNET = '/usr/bin/jsonnet';
const TWO_CLUSTERS = resolveConfig({
  selector: 'job=~"mcp-.*"',
  aggregationLabels: ['k8s_cluster', 'namespace'],
  clusterLabel: 'k8s_cluster',
  grafanaUrl: 'https://grafana.example.org',
  severities: { page: 'P1', ticket: 'P3' },
  clientResumeObjective: 0.999,
});
const CONFIGS = [
  ['defaults', DEFAULT_CONFIG],
  ['a two-cluster config with a Grafana host', TWO_CLUSTERS],
] as const;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function writePack(config: ForkwatchConfig): string {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-slo-tools-'));
  dirs.push(dir);
  for (const [name, content] of renderPack(config)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}
const jsonnet = (dir: string, code: string) =>
  JSON.parse(execFileSync(JSONNET, ['-J', join(dir, 'mixin'), '-e', code], { encoding: 'utf8' }));
const noErrors = (expr: string) => expect(analyzePromQL(expr).errors, expr).toEqual([]);

describe.each(CONFIGS)('the jsonnet mixin (%s), compiled with jsonnet', (_, config) => {
  const dir = writePack(config);
  const mixin = "local m = import 'mixin.libsonnet';";
  const files = ruleFiles(config);
  const groups = (file: string) => plainGroups(files.find(f => f.file === file)!.groups);

  test('prometheusAlerts and prometheusRules are the rendered rule groups, grafanaDashboards the dashboards', () => {
    const out = jsonnet(
      dir,
      `${mixin} { alerts: m.prometheusAlerts, rules: m.prometheusRules, dashboards: m.grafanaDashboards }`,
    );
    expect(out.alerts).toEqual(JSON.parse(JSON.stringify({ groups: groups('forkwatch-alerts.rules.yml') })));
    expect(out.rules).toEqual(JSON.parse(JSON.stringify({ groups: groups('forkwatch-recording.rules.yml') })));
    const dashboards = Object.fromEntries([...renderDashboards(config)].map(([n, c]) => [n, JSON.parse(c)]));
    expect(out.dashboards).toEqual(dashboards);
    expect(out.alerts.groups[0].rules.length).toBeGreaterThan(10);
  });

  test("a mixin user's _config override reaches the alerts' severities and links", () => {
    const out = jsonnet(
      dir,
      `${mixin} (m { _config+:: { severities: { page: 'sev1', ticket: 'sev3' }, runbookUrlPattern: 'https://wiki/%s', grafanaUrl: 'https://g/' } }).prometheusAlerts`,
    );
    const rules = out.groups[0].rules as {
      alert: string;
      labels: { severity: string };
      annotations: Record<string, string>;
    }[];
    expect(new Set(rules.map(r => r.labels.severity))).toEqual(new Set(['sev1', 'sev3']));
    for (const r of rules) {
      expect(r.annotations.runbook_url).toBe(`https://wiki/${r.alert}`);
      expect(r.annotations.dashboard_url).toBe(`https://g/d/${config.dashboardUid}/${config.dashboardUid}`);
    }
    // The default links are the runbook folder's (runbookBaseUrl); a base of one's own moves every one of them.
    const base = jsonnet(
      dir,
      `${mixin} (m { _config+:: { runbookBaseUrl: 'https://wiki.example.org/rb/' } }).prometheusAlerts`,
    ).groups.flatMap((g: { rules: { alert: string; annotations: Record<string, string> }[] }) => g.rules);
    expect(base.length).toBeGreaterThan(10);
    for (const r of base) expect(r.annotations.runbook_url).toBe(`https://wiki.example.org/rb/${r.alert}.md`);
    const pages = rules.filter(r => r.labels.severity === 'sev1').map(r => r.alert);
    expect(new Set(pages)).toEqual(
      new Set([
        'ForkwatchResumeLossBudgetBurn',
        'ForkwatchServerDeliveryBudgetBurn',
        'ForkwatchServerResultDeliveryBudgetBurn',
        'ForkwatchServerCrossSessionReplay',
        'ForkwatchClientResultsLost',
      ]),
    );
  });
});

/** Sloth prometheus/v1, as its Go types and validation say (required fields, objective in (0, 100], {{.window}}). */
const SLOTH_SCHEMA = {
  type: 'object',
  required: ['version', 'service', 'slos'],
  additionalProperties: false,
  properties: {
    version: { const: 'prometheus/v1' },
    service: { type: 'string', minLength: 1 },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    slos: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['name', 'objective', 'sli', 'alerting'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: '^[a-zA-Z0-9][a-zA-Z0-9_-]*$' },
          objective: { type: 'number', exclusiveMinimum: 0, maximum: 100 },
          description: { type: 'string' },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
          sli: {
            type: 'object',
            additionalProperties: false,
            properties: {
              events: {
                type: 'object',
                required: ['error_query', 'total_query'],
                additionalProperties: false,
                properties: {
                  error_query: { type: 'string', pattern: '\\{\\{\\s*\\.window\\s*\\}\\}' },
                  total_query: { type: 'string', pattern: '\\{\\{\\s*\\.window\\s*\\}\\}' },
                },
              },
            },
          },
          alerting: {
            type: 'object',
            required: ['name'],
            additionalProperties: false,
            properties: {
              name: { type: 'string', minLength: 1 },
              labels: { type: 'object', additionalProperties: { type: 'string' } },
              annotations: { type: 'object', additionalProperties: { type: 'string' } },
              page_alert: { $ref: '#/$defs/alert' },
              ticket_alert: { $ref: '#/$defs/alert' },
            },
          },
        },
      },
    },
  },
  $defs: {
    alert: {
      type: 'object',
      additionalProperties: false,
      properties: {
        disable: { type: 'boolean' },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        annotations: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
  },
};

/** Pyrra's ServiceLevelObjective CRD (v1alpha1 openAPIV3Schema): required indicator, target, window. */
const PYRRA_SCHEMA = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'pyrra.dev/v1alpha1' },
    kind: { const: 'ServiceLevelObjective' },
    metadata: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } },
    },
    spec: {
      type: 'object',
      required: ['indicator', 'target', 'window'],
      additionalProperties: false,
      properties: {
        target: { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$' },
        window: { type: 'string', pattern: '^[0-9]+[smhdwy]$' },
        description: { type: 'string' },
        alerting: {
          type: 'object',
          additionalProperties: false,
          properties: {
            disabled: { type: 'boolean' },
            name: { type: 'string' },
            highSeverity: { type: 'string' },
            lowSeverity: { type: 'string' },
          },
        },
        indicator: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ratio: {
              type: 'object',
              required: ['errors', 'total'],
              additionalProperties: false,
              properties: {
                errors: { $ref: '#/$defs/metric' },
                total: { $ref: '#/$defs/metric' },
                grouping: { type: 'array', items: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  },
  $defs: {
    metric: {
      type: 'object',
      required: ['metric'],
      additionalProperties: false,
      properties: { metric: { type: 'string' } },
    },
  },
};

/** OpenSLO v1: Service and SLO (inline ratioMetric indicator), as the OpenSLO README specifies them. */
const DNS_LABEL = { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 };
const METRIC_SOURCE = {
  type: 'object',
  required: ['metricSource'],
  properties: {
    metricSource: {
      type: 'object',
      required: ['type', 'spec'],
      properties: { type: { type: 'string' }, spec: { type: 'object', required: ['query'] } },
    },
  },
};
const OPENSLO_SCHEMA = {
  oneOf: [
    {
      type: 'object',
      required: ['apiVersion', 'kind', 'metadata', 'spec'],
      properties: {
        apiVersion: { const: 'openslo/v1' },
        kind: { const: 'Service' },
        metadata: { type: 'object', required: ['name'], properties: { name: DNS_LABEL } },
        spec: { type: 'object', properties: { description: { type: 'string', maxLength: 1050 } } },
      },
    },
    {
      type: 'object',
      required: ['apiVersion', 'kind', 'metadata', 'spec'],
      properties: {
        apiVersion: { const: 'openslo/v1' },
        kind: { const: 'SLO' },
        metadata: { type: 'object', required: ['name'], properties: { name: DNS_LABEL } },
        spec: {
          type: 'object',
          required: ['service', 'indicator', 'budgetingMethod', 'objectives'],
          properties: {
            description: { type: 'string', maxLength: 1050 },
            service: { type: 'string' },
            indicator: {
              type: 'object',
              required: ['metadata', 'spec'],
              properties: {
                metadata: { type: 'object', required: ['name'], properties: { name: DNS_LABEL } },
                spec: {
                  type: 'object',
                  required: ['ratioMetric'],
                  properties: {
                    ratioMetric: {
                      type: 'object',
                      required: ['counter', 'total'],
                      oneOf: [{ required: ['good'] }, { required: ['bad'] }],
                      properties: {
                        counter: { type: 'boolean' },
                        good: METRIC_SOURCE,
                        bad: METRIC_SOURCE,
                        total: METRIC_SOURCE,
                      },
                    },
                  },
                },
              },
            },
            timeWindow: {
              type: 'array',
              maxItems: 1,
              items: {
                type: 'object',
                required: ['duration'],
                properties: {
                  duration: { type: 'string', pattern: '^[0-9]+[mhdwMQY]$' },
                  isRolling: { type: 'boolean' },
                },
              },
            },
            budgetingMethod: { enum: ['Occurrences', 'Timeslices', 'RatioTimeslices'] },
            objectives: {
              type: 'array',
              minItems: 1,
              items: {
                type: 'object',
                required: ['target'],
                properties: { target: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 } },
              },
            },
          },
        },
      },
    },
  ],
};

const ajv = new Ajv({ allErrors: true, strict: false });
const validator = (schema: object) => {
  const validate = ajv.compile(schema);
  return (doc: unknown) => (validate(doc) ? '' : ajv.errorsText(validate.errors));
};
const sloth = validator(SLOTH_SCHEMA);
const pyrra = validator(PYRRA_SCHEMA);
const openslo = validator(OPENSLO_SCHEMA);

describe.each(CONFIGS)('SLO specs (%s)', (_, config) => {
  const pack = renderPack(config);
  const docs = (name: string) => parseAllDocuments(pack.get(name) ?? '').map(d => d.toJS());
  /** forkwatch's own SLI record for a window: the ratio every tool's bad/total must equal. */
  const recorded = (record: string) =>
    ruleFiles(config)
      .flatMap(f => f.groups.flatMap(g => g.rules))
      .find(r => r.record === record)?.expr;

  test('Sloth: the spec validates, and its queries are the SLI records of forkwatch at every window', () => {
    const spec = parse(pack.get('sloth/forkwatch.slos.yaml') ?? '');
    expect(sloth(spec)).toBe('');
    const [client, server] = spec.slos;
    expect(client.objective).toBe(config.clientResumeObjective * 100);
    expect(client.alerting.page_alert.labels.severity).toBe(config.severities.page);
    for (const w of ['5m', '1h', '3d']) {
      const q = (t: string) => t.replaceAll('{{.window}}', w);
      noErrors(q(client.sli.events.error_query));
      expect(`${q(client.sli.events.error_query)}\n/\n${q(client.sli.events.total_query)}\n`).toBe(
        recorded(CLIENT_LOSS_RATIO(w)),
      );
      // The server SLO as SLO tools can say it: what each process judged lost over what it wrote. The fleet balance
      // of shared stores (sharedEventStore) is in forkwatch's own records only; the description says so.
      noErrors(q(server.sli.events.error_query));
      const record = recorded(SERVER_LOSS_RATIO(w));
      expect(record).toContain(q(server.sli.events.error_query).replace('rate(', 'increase('));
      expect(record).toContain(q(server.sli.events.total_query).replace('rate(', 'increase('));
      expect(server.description).toMatch(/sharedEventStore/);
    }
    // Sloth rejects a spec without {{.window}}: the schema does too (so passing means something).
    const broken = structuredClone(spec);
    broken.slos[0].sli.events.error_query = 'sum(rate(x[5m]))';
    expect(sloth(broken)).toMatch(/error_query/);
  });

  test("Pyrra: both objects validate; errors and total are the SLI selectors, grouped by the rules' labels", () => {
    const objects = docs('pyrra/servicelevelobjectives.yaml');
    expect(objects).toHaveLength(2);
    for (const o of objects) {
      expect(pyrra(o)).toBe('');
      noErrors(o.spec.indicator.ratio.errors.metric);
      noErrors(o.spec.indicator.ratio.total.metric);
      expect(o.spec.indicator.ratio.grouping).toEqual([...config.aggregationLabels, 'job']);
      expect(o.spec.window).toBe(config.sloWindow);
    }
    expect(Number(objects[0].spec.target)).toBe(config.clientResumeObjective * 100);
    const client = recorded(CLIENT_LOSS_RATIO('1h')) ?? '';
    expect(client).toContain(`rate(${objects[0].spec.indicator.ratio.errors.metric}[1h])`);
    expect(client).toContain(`rate(${objects[0].spec.indicator.ratio.total.metric}[1h])`);
    const broken = structuredClone(objects[0]);
    broken.spec.target = 99.5;
    expect(pyrra(broken)).toMatch(/target/);
  });

  test('OpenSLO v1: a Service and one SLO per objective, all valid, referring to that Service', () => {
    const [service, ...slos] = docs('openslo/forkwatch.openslo.yaml');
    expect(openslo(service)).toBe('');
    expect(service.kind).toBe('Service');
    expect(slos.map(s => s.metadata.name)).toEqual(['mcp-resume-loss', 'mcp-server-delivery']);
    for (const slo of slos) {
      expect(openslo(slo)).toBe('');
      expect(slo.spec.service).toBe(service.metadata.name);
      noErrors(slo.spec.indicator.spec.ratioMetric.bad.metricSource.spec.query);
      noErrors(slo.spec.indicator.spec.ratioMetric.total.metricSource.spec.query);
      expect(slo.spec.timeWindow).toEqual([{ duration: config.sloWindow, isRolling: true }]);
    }
    expect(slos[0].spec.objectives[0].target).toBe(config.clientResumeObjective);
    const broken = structuredClone(slos[0]);
    broken.spec.objectives[0].target = 99.5;
    expect(openslo(broken)).not.toBe('');
  });
});
