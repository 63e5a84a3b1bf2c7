/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The published JSON Schema of a user's config file (schema/pack-config.schema.json, `forkwatch/pack-config.schema.json`),
 * derived from DEFAULT_CONFIG's shape so it cannot drift from what resolveConfig accepts: every key optional (the
 * defaults fill in), unknown keys refused, durations and shares checked. pack/generate.ts writes it; a test keeps the
 * committed file current and checks that the schema and resolveConfig agree.
 */
import { DEFAULT_CONFIG, THRESHOLD_REASONS } from './config';

type Schema = Record<string, unknown>;

const DURATION: Schema = { type: 'string', pattern: '^[0-9]+[smhdw]$' };
const SHARE: Schema = { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 };
const LABEL = { type: 'string', pattern: '^[a-zA-Z_][a-zA-Z0-9_]*$' };
const STRING_MAP: Schema = { type: 'object', additionalProperties: { type: 'string' } };

/** What each top-level key is; the thresholds' reasons are in pack/config/config.ts. */
const DOCS: Record<string, string> = {
  selector: 'PromQL label matchers that scope every rule and panel to your jobs, e.g. job=~"mcp-.*". Empty: all.',
  aggregationLabels: 'Labels every aggregation keeps besides job (and instance where per process), outermost first.',
  clusterLabel: 'The label that tells clusters apart (the dashboard variable); one of aggregationLabels.',
  runbookBaseUrl:
    "The folder that holds the runbooks, ending in /: each alert's runbook_url is <runbookBaseUrl><AlertName>.md, the dashboard's runbook index the folder. Default: the repository's alerts/runbooks/ at this version's tag (the same files ship in the npm package).",
  runbookUrlPattern: "Overrides every alert's runbook URL; %s is the alert name. Empty: <runbookBaseUrl>%s.md.",
  runbooksIndexUrl:
    'Overrides where the list of all runbooks lives (the dashboard header link). Empty: runbookBaseUrl.',
  grafanaUrl: "Grafana's base URL: every alert gets dashboard_url <grafanaUrl>/d/<uid>/<uid>. Empty: no dashboard_url.",
  dashboardUid: 'The uid (and file name) of the overview dashboard.',
  severities: 'The severity label value of pages and of tickets.',
  rateWindow: 'Rate window of the recording rules the share and gap alerts read (job:…:rate5m).',
  clientResumeObjective: 'Client SLO: share of 2xx resumes whose ids can prove continuity that continue the log.',
  serverDeliveryObjective: 'Server SLO: share of the events written that reach a live client.',
  serverResultObjective:
    'Protocol 2026-07-28 SLO: share of the exchanges clients asked for that reached them without a re-issue.',
  sloWindow: "The SLOs' compliance window (Sloth, Pyrra, OpenSLO).",
  sharedStoreReplayLag:
    'Fleets with a shared event store (sharedEventStore): how much longer than an SLO window the fleet balance looks back for replays by other replicas.',
  probe: "forkwatch exporter: the probe's scrape job, module, interval, targets and alerts.",
  burnWindows: 'Multi-window, multi-burn-rate alerts of both SLOs; each item names every field.',
  alerts: 'Thresholds, windows and `for` of the other alerts, by alert name.',
  traceSearch:
    "Panel links to traces: tempo (Grafana Explore; target empty: the dashboard's tempo_datasource variable, set to a Tempo data source after import; or a data source uid), jaeger (target: the UI's URL), or none.",
  kubernetes: 'The PrometheusRule, PodMonitor and Pyrra objects.',
  otelCollector: 'The OpenTelemetry Collector config: aggregation label -> resource attribute it is copied from.',
  grafanaDashboardsPath: "Where Grafana reads the dashboard files (the provisioning file's options.path).",
};

const ENUMS: Record<string, unknown[]> = {
  'traceSearch.backend': ['tempo', 'jaeger', 'none'],
  'burnWindows[].severity': ['page', 'ticket'],
};
const OPEN_MAPS = new Set(['kubernetes.labels', 'kubernetes.podSelector', 'otelCollector.resourceAttributes']);
const DURATION_KEYS = new Set([
  'for',
  'window',
  'lookback',
  'long',
  'short',
  'rateWindow',
  'sloWindow',
  'interval',
  'sharedStoreReplayLag',
  'blindFor',
]);

function schemaOf(value: unknown, path: string, key: string, whole: boolean): Schema {
  if (OPEN_MAPS.has(path)) return STRING_MAP;
  if (ENUMS[path]) return { enum: ENUMS[path] };
  if (DURATION_KEYS.has(key)) return DURATION;
  if (key === 'share' || key === 'quantile' || key.endsWith('Objective')) return SHARE;
  if (key === 'aggregationLabels') return { type: 'array', items: LABEL, uniqueItems: true };
  if (Array.isArray(value)) return { type: 'array', items: schemaOf(value[0], `${path}[]`, key, true) };
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    return {
      type: 'object',
      additionalProperties: false,
      ...(whole ? { required: entries.map(([k]) => k) } : {}),
      properties: Object.fromEntries(entries.map(([k, v]) => [k, schemaOf(v, path ? `${path}.${k}` : k, k, whole)])),
    };
  }
  if (typeof value === 'number') return { type: 'number', ...(key === 'factor' ? { exclusiveMinimum: 0 } : {}) };
  return { type: typeof value };
}

export function configSchema(): Schema {
  const root = schemaOf(DEFAULT_CONFIG, '', '', false) as { properties: Record<string, Schema> };
  for (const [key, description] of Object.entries(DOCS))
    root.properties[key] = { description, ...root.properties[key] };
  const alerts = root.properties.alerts as { properties: Record<string, Schema> };
  for (const [name, reason] of Object.entries(THRESHOLD_REASONS))
    alerts.properties[name] = { description: reason, ...alerts.properties[name] };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://github.com/forkwatch/forkwatch/blob/main/schema/pack-config.schema.json',
    title: 'forkwatch pack config',
    description:
      'The config of `forkwatch pack`: names only what differs from the defaults (objects merge key by key, ' +
      'arrays replace). Defaults and the reason for every threshold: pack/config/config.ts.',
    ...root,
    properties: { $schema: { type: 'string' }, ...root.properties },
  };
}
