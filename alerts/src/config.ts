/**
 * The alerting and dashboard pack's one config object, in the style of a monitoring mixin's `_config`: every rule,
 * alert, panel and link is generated from it. `DEFAULT_CONFIG` renders the committed alerts/*.rules.yml and
 * dashboards/*.json; `npm run pack -- --config <file>` renders a user's.
 */

export type Severity = string;

/** One multi-window, multi-burn-rate alert (SRE workbook ch. 5). */
export interface BurnWindow {
  /** Long window: the rate the budget burns at. */
  long: string;
  /** Short window: stops the alert soon after the burn stops. */
  short: string;
  /** Burn-rate factor: the alert fires above factor x error budget. */
  factor: number;
  for: string;
  /** Which severity of `severities` it gets: page or ticket. */
  severity: 'page' | 'ticket';
  /**
   * Traffic floor: good + bad events the long window must hold, so that one bad event alone stays below the
   * threshold (1 / minEvents < factor x budget).
   */
  minEvents: number;
}

export interface TraceSearch {
  /** `tempo`: Grafana Explore with a TraceQL query; `jaeger`: the Jaeger UI search page. `none`: no trace links. */
  backend: 'tempo' | 'jaeger' | 'none';
  /** Tempo: the Grafana data source uid; Jaeger: the UI's base URL. */
  target: string;
  /** Jaeger needs a service name to search; Tempo ignores it. */
  service: string;
}

export interface KubernetesOutput {
  /** Namespace of the PrometheusRule and PodMonitor objects. */
  namespace: string;
  /** Labels the Prometheus object's ruleSelector and podMonitorSelector match (kube-prometheus: none needed). */
  labels: Record<string, string>;
  /** Labels of the MCP pods to scrape, and the name of their metrics container port. */
  podSelector: Record<string, string>;
  port: string;
  interval: string;
}

export interface CollectorOutput {
  /** Where the Collector's prometheus exporter listens for Prometheus to scrape. */
  prometheusEndpoint: string;
  /** Aggregation label -> the OTLP resource attribute it is copied from. */
  resourceAttributes: Record<string, string>;
}

export interface ForkwatchConfig {
  /** PromQL label matchers that scope every rule and panel to the user's jobs, e.g. `job=~"mcp-.*"`. '' = all. */
  selector: string;
  /** Labels every aggregation keeps besides `job` (and `instance` where per process), outermost first. */
  aggregationLabels: string[];
  /** The label that tells clusters apart (the dashboard's cluster variable); must be one of aggregationLabels. */
  clusterLabel: string;
  /** `%s` is replaced by the alert name. */
  runbookUrlPattern: string;
  /** Where the list of all runbooks lives (the dashboard's header link). */
  runbooksIndexUrl: string;
  /** Grafana's base URL; the dashboard URL in every alert is `${grafanaUrl}/d/${dashboardUid}/${dashboardUid}`. */
  grafanaUrl: string;
  dashboardUid: string;
  severities: { page: Severity; ticket: Severity };
  /** The client resume-loss SLO: share of 2xx resumes that continue the session log. */
  clientResumeObjective: number;
  /** The server delivery SLO: share of events written that are not lost to a live client. */
  serverDeliveryObjective: number;
  /** Burn-rate windows, shared by both SLOs; every long and short window gets a ratio recording rule. */
  burnWindows: BurnWindow[];
  /** ForkwatchServerEventsWithoutListener: ticket above this share of events with no listener over 1h... */
  noListenerShare: number;
  /** ...when the hour held at least this many events written. */
  noListenerMinEvents: number;
  traceSearch: TraceSearch;
  kubernetes: KubernetesOutput;
  otelCollector: CollectorOutput;
  /** Where Grafana reads the dashboard JSON files (the provisioning file's options.path). */
  grafanaDashboardsPath: string;
}

export const DEFAULT_CONFIG: ForkwatchConfig = {
  selector: '',
  aggregationLabels: ['cluster', 'namespace'],
  clusterLabel: 'cluster',
  runbookUrlPattern: 'https://github.com/forkwatch/forkwatch/blob/main/alerts/runbooks/%s.md',
  runbooksIndexUrl: 'https://github.com/forkwatch/forkwatch/tree/main/alerts/runbooks',
  grafanaUrl: 'https://grafana.example.com',
  dashboardUid: 'forkwatch-overview',
  severities: { page: 'critical', ticket: 'warning' },
  clientResumeObjective: 0.995,
  serverDeliveryObjective: 0.995,
  burnWindows: [
    { long: '1h', short: '5m', factor: 14.4, for: '2m', severity: 'page', minEvents: 20 },
    { long: '6h', short: '30m', factor: 6, for: '15m', severity: 'page', minEvents: 50 },
    { long: '1d', short: '2h', factor: 3, for: '1h', severity: 'ticket', minEvents: 100 },
    { long: '3d', short: '6h', factor: 1, for: '3h', severity: 'ticket', minEvents: 300 },
  ],
  noListenerShare: 0.01,
  noListenerMinEvents: 100,
  traceSearch: { backend: 'tempo', target: 'tempo', service: '' },
  kubernetes: {
    namespace: 'monitoring',
    labels: { 'app.kubernetes.io/name': 'forkwatch', prometheus: 'k8s', role: 'alert-rules' },
    podSelector: { 'app.kubernetes.io/component': 'mcp-server' },
    port: 'metrics',
    interval: '30s',
  },
  otelCollector: {
    prometheusEndpoint: '0.0.0.0:8889',
    resourceAttributes: { cluster: 'k8s.cluster.name', namespace: 'k8s.namespace.name' },
  },
  grafanaDashboardsPath: '/var/lib/grafana/dashboards/forkwatch',
};

/** Nested objects are merged one level deep, so a user names only what differs. */
const NESTED = ['severities', 'traceSearch', 'kubernetes', 'otelCollector'] as const;
type Nested = (typeof NESTED)[number];

export type UserConfig = Partial<Omit<ForkwatchConfig, Nested>> & { [K in Nested]?: Partial<ForkwatchConfig[K]> };

/** The defaults overlaid with a user's config; throws on a config the rules cannot honour. */
export function resolveConfig(user: UserConfig = {}): ForkwatchConfig {
  const known = new Set(Object.keys(DEFAULT_CONFIG));
  const unknown = Object.keys(user).filter(k => !known.has(k));
  if (unknown.length > 0) throw new Error(`unknown config keys: ${unknown.join(', ')}`);
  const config = { ...DEFAULT_CONFIG, ...user } as ForkwatchConfig;
  for (const key of NESTED)
    (config as unknown as Record<string, unknown>)[key] = { ...DEFAULT_CONFIG[key], ...user[key] };
  if (config.aggregationLabels.length > 0 && !config.aggregationLabels.includes(config.clusterLabel)) {
    throw new Error(`clusterLabel ${config.clusterLabel} must be one of aggregationLabels`);
  }
  if (config.aggregationLabels.some(l => l === 'job' || l === 'instance' || !/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(l))) {
    throw new Error('aggregationLabels are label names other than job and instance');
  }
  if (!config.runbookUrlPattern.includes('%s')) throw new Error('runbookUrlPattern needs a %s for the alert name');
  for (const o of [config.clientResumeObjective, config.serverDeliveryObjective]) {
    if (!(o > 0 && o < 1)) throw new Error(`SLO objectives are between 0 and 1, not ${o}`);
  }
  return config;
}

export const runbookUrl = (config: ForkwatchConfig, alert: string) => config.runbookUrlPattern.replace('%s', alert);
export const dashboardUrl = (config: ForkwatchConfig) =>
  `${config.grafanaUrl.replace(/\/$/, '')}/d/${config.dashboardUid}/${config.dashboardUid}`;

/** Every distinct ratio window: the burn alerts' long and short windows, shortest first. */
export function sloWindows(config: ForkwatchConfig): string[] {
  const all = config.burnWindows.flatMap(w => [w.long, w.short]);
  return [...new Set(all)].sort((a, b) => seconds(a) - seconds(b));
}

export function seconds(duration: string): number {
  const units: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
  const m = /^(\d+)([smhdw])$/.exec(duration);
  if (!m) throw new Error(`windows are one number and unit (5m, 1h, 3d), not ${duration}`);
  return Number(m[1]) * (units[m[2] as string] as number);
}
