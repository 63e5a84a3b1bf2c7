/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The alerting and dashboard pack's one config object, in the style of a monitoring mixin's `_config`
 * (kubernetes-mixin's config.libsonnet): every rule, alert, panel and link is generated from it, and every threshold,
 * window and `for` is a field here with the reason for its default. `DEFAULT_CONFIG` renders the committed
 * alerts/*.rules.yml and dashboards/*.json; `forkwatch pack --config <file>` renders a user's (pack/config/resolve.ts
 * overlays it on these defaults).
 */

import { PACKAGE_VERSION } from '../../src/shared/version';

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
  /**
   * Tempo: '' (the default) links through the dashboard's `tempo_datasource` variable, which Grafana sets to a Tempo
   * data source of the instance right after import (and the user can switch); a data source uid pins the links to
   * it, without the variable. Jaeger: the UI's base URL (required).
   */
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
  /** Pod label whose value becomes the `job` label of the scraped series (the PodMonitor's jobLabel). */
  jobLabel: string;
}

export interface CollectorOutput {
  /** Where the Collector's prometheus exporter listens for Prometheus to scrape. */
  prometheusEndpoint: string;
  /** Aggregation label -> the OTLP resource attribute it is copied from. */
  resourceAttributes: Record<string, string>;
}

/** "Any increase" alerts: a count that should stay at 0 on healthy traffic. */
export interface IncreaseAlert {
  /** How far back an increase counts (and how long the alert stays firing after the last one). */
  window: string;
  for: string;
}

/** "Share of resumes" alerts over the recording rules' rate window. */
export interface ShareAlert {
  /** Fires above this share (0..1) of the resumes in the rate window. */
  share: number;
  for: string;
  /**
   * Traffic floor: resumes the rate window must hold (the probe's deliberate refusals, `probe_rejected`, not
   * counted) before a share means anything. 20 with a 5 % share: one refused resume alone is 1/20, never above it.
   */
  minResumes: number;
}

/** The probe's alerts, on `forkwatch exporter` (or --prom-file/--pushgateway) series. */
export interface ProbeAlerts {
  /**
   * The probe's verdict is not resumable. `for` 5m: ten probes at a 30 s interval, so a rolling restart that fails
   * one or two probes stays quiet, while a store or routing fault, which fails every probe, opens the ticket.
   */
  ForkwatchProbeNotResumable: { for: string };
  /**
   * The probe cannot reach a verdict (unreachable, 401, its deadline, a standalone stream it cannot exercise). 30m:
   * a ticket for a probe that tells nothing, never a page.
   */
  ForkwatchProbeUntestable: { for: string };
  /** No probe result for `window` (an exporter job that is down, a cron that stopped). */
  ForkwatchProbeStale: { window: string; for: string };
}

/** Where the probe runs and what it probes: the scrape config example, and the probe alerts' scope. */
export interface ProbeConfig {
  /** Prometheus job name of the exporter's /probe scrapes (the probe alerts select on it). */
  job: string;
  /** host:port of `forkwatch exporter`. */
  exporterAddress: string;
  /** Module of the exporter's config file to probe with. */
  module: string;
  /** How often each target is probed; 30s is the interval the pack's quiet-on-healthy tests use. */
  interval: string;
  /** Below the interval; the exporter answers half a second before it (its per-probe deadline). */
  scrapeTimeout: string;
  /** MCP endpoints to probe (the example's static targets). */
  targets: string[];
  alerts: ProbeAlerts;
}

/**
 * The thresholds, windows and `for` of every alert except the two SLO burn alerts (those are `burnWindows`). Why each
 * default is what it is: THRESHOLD_REASONS below (also the descriptions of the published JSON Schema).
 */
export interface AlertThresholds {
  ForkwatchForksDetected: IncreaseAlert;
  ForkwatchDuplicateDeliveries: IncreaseAlert;
  ForkwatchServerUnknownCursors: ShareAlert;
  ForkwatchServerCursorsIgnored: IncreaseAlert;
  ForkwatchServerCrossSessionReplay: IncreaseAlert;
  ForkwatchServerCompletedStreamResumed: IncreaseAlert;
  ForkwatchResumesRejected: ShareAlert;
  ForkwatchServerResumesRejected: ShareAlert;
  ForkwatchResumeGapSecondsHigh: { quantile: number; seconds: number; for: string };
  ForkwatchResumeGapEventsHigh: { quantile: number; events: number; for: string };
  ForkwatchServerEventsWithoutListener: { window: string; share: number; minEvents: number; for: string };
  ForkwatchTargetWithoutMetrics: { lookback: string; blindFor: string; for: string };
  ForkwatchMetricsAbsent: { for: string };
  /**
   * Protocol 2026-07-28: a probable re-issue of a tool not annotated idempotent (a broken exchange, then the same
   * principal, tool and arguments) may have executed twice. Any in 1h opens a ticket: healthy traffic breaks no
   * exchange, so it has none; `for` 1m rides out one scrape's jitter.
   */
  ForkwatchServerDuplicateExecutionRisk: IncreaseAlert;
  /**
   * Protocol 2026-07-28: share of a process's event-bus publishes with no listen stream on that process, over
   * `window`. 5 % over 1h with a floor of 20 publishes: a bus that does not span the replicas, or clients that do
   * not re-listen, stay above it; a publish between one stream's drop and its re-listen stays below.
   */
  ForkwatchServerPublishesWithoutListener: { window: string; share: number; minEvents: number; for: string };
  /**
   * Protocol 2026-07-28, client view: share of a job's exchanges that ended early or broke and that the app did not
   * re-issue within the re-issue window (the result is lost to the app), over `window`, once the window holds
   * `minExchanges` exchanges. A page: a lost result, like a late one on the server side.
   */
  ForkwatchClientResultsLost: { window: string; share: number; minExchanges: number; for: string };
  /** Protocol 2026-07-28, client view: any exchange the app re-issued after it broke (it may have run twice). */
  ForkwatchClientExchangesReissued: IncreaseAlert;
  /** Protocol 2026-07-28, client view: any subscriptions/listen stream dropped (notifications lost until re-listen). */
  ForkwatchClientListenStreamsDropped: IncreaseAlert;
  /** Protocol 2026-07-28, client view: the quantile of the time from a dropped listen stream to its re-listen. */
  ForkwatchClientListenGapSecondsHigh: { window: string; quantile: number; seconds: number; for: string };
  /** Protocol 2026-07-28 tasks (SEP-2663): any task whose creating response never reached its client. */
  ForkwatchServerOrphanedTasks: IncreaseAlert;
  /**
   * Client reconnects that dropped their cursor after a resume without a frame, in at least `minWindows` of the
   * `window`s of the last `lookback`: recurring, not one restart.
   */
  ForkwatchCursorsDroppedAfterInconclusive: { window: string; lookback: string; minWindows: number; for: string };
  /** Issue 41: sessions a server answered as new after losing them (client view, or a server's empty hydration). */
  ForkwatchSessionsRevived: IncreaseAlert;
  /** Issue 41: empty reconnects (client) or GETs repeated after an empty answer (server), per second, per job. */
  ForkwatchReconnectStorm: { window: string; perSecond: number; for: string };
}

/** The reason for each alert's default threshold, window and `for`. */
export const THRESHOLD_REASONS: Record<keyof AlertThresholds, string> = {
  ForkwatchForksDetected:
    "Any fork is loss: window 10m so one fork keeps the ticket open long enough to be seen; `for` 1m rides out one scrape's jitter without delaying a real ticket.",
  ForkwatchDuplicateDeliveries:
    'Window 10m and `for` 1m as for ForkwatchForksDetected: any duplicate frame is a replay from the wrong place.',
  ForkwatchServerUnknownCursors:
    "Share of a process's resumes whose cursor it does not know. 5 % for 15m: a restart or a scale-out gives a short burst of unknown cursors that must not open a ticket; a routing fault stays above it.",
  ForkwatchServerCursorsIgnored:
    'Any resume ignored for want of an event store is a configuration fault: any in 10m, `for` 1m.',
  ForkwatchServerCrossSessionReplay:
    'Any replay of another session\'s events is a data leak, lost events or not: it pages on the first one. Window 10m and `for` 1m as for the other "any" alerts: one scrape\'s jitter, no real delay.',
  ForkwatchServerCompletedStreamResumed:
    'Any resume of a request stream that completed here is a fork (ids colliding across replicas): a ticket, like a single client fork. Window 10m, `for` 1m.',
  ForkwatchResumesRejected:
    'Client view: share of resumes answered non-2xx. 5 % for 15m, as for unknown cursors (deploys burst).',
  ForkwatchServerResumesRejected:
    'Server view of ForkwatchResumesRejected, per process: 5 % for 15m for the same reason (deploys burst).',
  ForkwatchResumeGapSecondsHigh:
    "p99 seconds from losing a stream to its resume's first frame. 30 s: the SDK's reconnection backoff stays well under it; above it, users see stalls. `for` 15m: one slow client must not open a ticket.",
  ForkwatchResumeGapEventsHigh:
    'p99 events replayed per resume. 1000: a replay that large stalls the client and the store; healthy reconnects replay a handful. `for` 15m as above.',
  ForkwatchServerEventsWithoutListener:
    "Share of a process's events written with no listening stream, over `window`. 1 % over 1h: a routing or client bug that may stay under the delivery budget; the traffic floor `minEvents` keeps one event of a quiet process from being 100 %.",
  ForkwatchTargetWithoutMetrics:
    'A target up without forkwatch series, in a job that had them within `lookback` (1d: a deploy that dropped the instrumentation is caught the same day, while jobs that never had forkwatch stay quiet). `for` 15m rides out a slow start. A process whose HTTP server answers MCP that no patched transport judged (info sdk_class="unjudged") fires after `for`; one where forkwatch patched nothing and judged nothing (info sdk_class="none") only after `blindFor` (1h) of it, and `for`: an idle process has judged nothing yet, a lazily loaded SDK or the first session stream of a wire-only client comes well within the hour.',
  ForkwatchMetricsAbsent:
    'No forkwatch series at all: `for` 15m so a Prometheus restart or a first deploy stays quiet.',
  ForkwatchServerDuplicateExecutionRisk:
    'Protocol 2026-07-28: any probable re-issue of a tool not annotated idempotent may have run it twice: a ticket on any in 1h; `for` 1m rides out one scrape.',
  ForkwatchServerPublishesWithoutListener:
    "Protocol 2026-07-28: share of a process's event-bus publishes with no listen stream there. 5 % over 1h with a floor of 20 publishes: a bus that does not span the replicas stays above it; a publish between one stream's drop and its re-listen stays below. `for` 15m.",
  ForkwatchClientResultsLost:
    "Protocol 2026-07-28, client view: share of a job's exchanges (completed, ended early or broken; the app's own cancels and connection failures left out) that broke and were not re-issued within the re-issue window: results lost to the app. 5 % over 15m with a floor of 50 exchanges pages: above the fast burn of a 99.5 % objective (14.4 x 0.5 % = 7.2 % over 1h) a little sooner, and one lost result among few exchanges never pages. `for` 5m.",
  ForkwatchClientExchangesReissued:
    "Protocol 2026-07-28, client view: any exchange re-issued after it broke may have executed twice (the client does not know the tool's idempotency; the server's ForkwatchServerDuplicateExecutionRisk does where it saw the break). Healthy traffic breaks no exchange: any in 1h opens a ticket; `for` 1m rides out one scrape.",
  ForkwatchClientListenStreamsDropped:
    'Protocol 2026-07-28, client view: any subscriptions/listen stream that dropped (not closed by the server, not cancelled by the app): listen streams have no replay, so what was published until the re-listen is lost. Healthy traffic and graceful restarts drop none: any in 1h opens a ticket; `for` 1m.',
  ForkwatchClientListenGapSecondsHigh:
    'Protocol 2026-07-28, client view: p99 over 1h of the time from a dropped listen stream to the acknowledgement of its re-listen. 30 s: an app that re-listens at once stays far below it; above it, every notification of half a minute is lost. `for` 5m: gaps are rare events, the 1h window carries them.',
  ForkwatchServerOrphanedTasks:
    'Protocol 2026-07-28 tasks: any task whose creating response never reached the client runs for nobody (the client re-issues and creates a second one). Healthy traffic orphans none: any in 1h per process opens a ticket; `for` 1m.',
  ForkwatchCursorsDroppedAfterInconclusive:
    'A rolling restart or failover leaves a burst of these in one or two 10m windows (the fleet lab: 35 and 7 in about a minute), lossless unless events were sent in the gap, which the server delivery SLO pages on: a ticket only when 3 of the 18 windows of 3h had some. `for` 1m rides out one scrape.',
  ForkwatchSessionsRevived:
    'Any session answered as new after it had worked lost its state on the server (subscriptions, log level, pending events) without an error: a ticket on the first one. Window 1h so one revival is seen; `for` 1m rides out one scrape. A server hydration that restored a log (state="restored") is not counted.',
  ForkwatchReconnectStorm:
    "A storm reconnects about once a second per session, forever (the SDK client's retry count resets on every graceful close). 0.5/s per job over 5m, `for` 10m: one session storming trips it; a single empty answer, a restart's burst of reconnects, or idle streams a balancer closes after its timeout (longer than forkwatch's 5 s empty-stream window, so not counted at all) stay below.",
};

export interface ForkwatchConfig {
  /** PromQL label matchers that scope every rule and panel to the user's jobs, e.g. `job=~"mcp-.*"`. '' = all. */
  selector: string;
  /** Labels every aggregation keeps besides `job` (and `instance` where per process), outermost first. */
  aggregationLabels: string[];
  /** The label that tells clusters apart (the dashboard's cluster variable); must be one of aggregationLabels. */
  clusterLabel: string;
  /**
   * The folder that holds the runbooks, ending in `/`: each alert's runbook_url is `<runbookBaseUrl><AlertName>.md`
   * and the dashboard's runbook index link is the folder itself. Default: alerts/runbooks/ of the repository at the
   * tag of this package's version (`v<version>`), the runbooks that match the rules rendered, at a URL that never
   * moves; a branch (`main`) may have renamed an alert or changed its meaning since. The same files are in the npm
   * package (node_modules/forkwatch/alerts/runbooks/), for a team that hosts its runbooks itself.
   */
  runbookBaseUrl: string;
  /** Overrides the runbook URL of every alert; `%s` is replaced by the alert name. '': `<runbookBaseUrl>%s.md`. */
  runbookUrlPattern: string;
  /** Overrides where the list of all runbooks lives (the dashboard's header link). '': `runbookBaseUrl`. */
  runbooksIndexUrl: string;
  /**
   * Grafana's base URL. When set, every alert gets `dashboard_url: ${grafanaUrl}/d/${dashboardUid}/${dashboardUid}`;
   * '' (the default) emits no dashboard_url, since a link to a placeholder host is wrong for everyone.
   */
  grafanaUrl: string;
  dashboardUid: string;
  severities: { page: Severity; ticket: Severity };
  /**
   * The rate window of the recording rules the alerts and shares read (`job:…:rate5m`). 5m: at least four scrapes
   * at a 1m interval, short enough that a share alert follows a deploy within minutes.
   */
  rateWindow: string;
  /** The client resume-loss SLO: share of 2xx resumes that continue the session log. */
  clientResumeObjective: number;
  /** The server delivery SLO: share of events written that are not lost to a live client. */
  serverDeliveryObjective: number;
  /**
   * Protocol 2026-07-28, the delivered-results SLO: share of the per-request exchanges clients asked for that reached
   * them without a re-issue (an exchange that broke and was asked for again is lost; a cancel is not).
   */
  serverResultObjective: number;
  /**
   * The SLOs' compliance window (Sloth, Pyrra and OpenSLO specs; the README's "over 30 days"). 30d: a month of error
   * budget, the SRE workbook's window, which the burn-rate factors below are computed for (14.4x = 2 % in 1h).
   */
  sloWindow: string;
  /**
   * Fleets with a shared event store (forkwatch's `sharedEventStore`): how much longer than an SLO window the fleet
   * balance looks back for replays by other replicas. A replica counts what it stored and did not replay a delivery
   * window (30 s) after the session's next request; the replay elsewhere usually comes before that, but a client
   * whose stream stays open on another replica resumes only when that stream breaks. 5m: ten delivery windows.
   */
  sharedStoreReplayLag: string;
  /** Burn-rate windows, shared by both SLOs; every long and short window gets a ratio recording rule. */
  burnWindows: BurnWindow[];
  /** Thresholds, windows and `for` of the other alerts, by alert name. */
  alerts: AlertThresholds;
  traceSearch: TraceSearch;
  kubernetes: KubernetesOutput;
  otelCollector: CollectorOutput;
  /** Where Grafana reads the dashboard JSON files (the provisioning file's options.path). */
  grafanaDashboardsPath: string;
  probe: ProbeConfig;
}

/** The repository the package is published from (package.json's `repository`; test/alerts/config-render.test.ts). */
export const REPOSITORY_URL = 'https://github.com/forkwatch/forkwatch';

export const DEFAULT_CONFIG: ForkwatchConfig = {
  selector: '',
  aggregationLabels: ['cluster', 'namespace'],
  clusterLabel: 'cluster',
  runbookBaseUrl: `${REPOSITORY_URL}/blob/v${PACKAGE_VERSION}/alerts/runbooks/`,
  runbookUrlPattern: '',
  runbooksIndexUrl: '',
  grafanaUrl: '',
  dashboardUid: 'forkwatch-overview',
  severities: { page: 'critical', ticket: 'warning' },
  rateWindow: '5m',
  clientResumeObjective: 0.995,
  serverDeliveryObjective: 0.995,
  serverResultObjective: 0.995,
  sloWindow: '30d',
  sharedStoreReplayLag: '5m',
  burnWindows: [
    { long: '1h', short: '5m', factor: 14.4, for: '2m', severity: 'page', minEvents: 20 },
    { long: '6h', short: '30m', factor: 6, for: '15m', severity: 'page', minEvents: 50 },
    { long: '1d', short: '2h', factor: 3, for: '1h', severity: 'ticket', minEvents: 100 },
    { long: '3d', short: '6h', factor: 1, for: '3h', severity: 'ticket', minEvents: 300 },
  ],
  alerts: {
    ForkwatchForksDetected: { window: '10m', for: '1m' },
    ForkwatchDuplicateDeliveries: { window: '10m', for: '1m' },
    ForkwatchServerUnknownCursors: { share: 0.05, for: '15m', minResumes: 20 },
    ForkwatchServerCursorsIgnored: { window: '10m', for: '1m' },
    ForkwatchServerCrossSessionReplay: { window: '10m', for: '1m' },
    ForkwatchServerCompletedStreamResumed: { window: '10m', for: '1m' },
    ForkwatchResumesRejected: { share: 0.05, for: '15m', minResumes: 20 },
    ForkwatchServerResumesRejected: { share: 0.05, for: '15m', minResumes: 20 },
    ForkwatchResumeGapSecondsHigh: { quantile: 0.99, seconds: 30, for: '15m' },
    ForkwatchResumeGapEventsHigh: { quantile: 0.99, events: 1000, for: '15m' },
    ForkwatchServerEventsWithoutListener: { window: '1h', share: 0.01, minEvents: 100, for: '15m' },
    ForkwatchTargetWithoutMetrics: { lookback: '1d', blindFor: '1h', for: '15m' },
    ForkwatchMetricsAbsent: { for: '15m' },
    ForkwatchServerDuplicateExecutionRisk: { window: '1h', for: '1m' },
    ForkwatchServerPublishesWithoutListener: { window: '1h', share: 0.05, minEvents: 20, for: '15m' },
    ForkwatchClientResultsLost: { window: '15m', share: 0.05, minExchanges: 50, for: '5m' },
    ForkwatchClientExchangesReissued: { window: '1h', for: '1m' },
    ForkwatchClientListenStreamsDropped: { window: '1h', for: '1m' },
    ForkwatchClientListenGapSecondsHigh: { window: '1h', quantile: 0.99, seconds: 30, for: '5m' },
    ForkwatchServerOrphanedTasks: { window: '1h', for: '1m' },
    ForkwatchCursorsDroppedAfterInconclusive: { window: '10m', lookback: '3h', minWindows: 3, for: '1m' },
    ForkwatchSessionsRevived: { window: '1h', for: '1m' },
    ForkwatchReconnectStorm: { window: '5m', perSecond: 0.5, for: '10m' },
  },
  traceSearch: { backend: 'tempo', target: '', service: '' },
  kubernetes: {
    namespace: 'monitoring',
    labels: { 'app.kubernetes.io/name': 'forkwatch', prometheus: 'k8s', role: 'alert-rules' },
    podSelector: { 'app.kubernetes.io/component': 'mcp-server' },
    port: 'metrics',
    interval: '30s',
    jobLabel: 'app.kubernetes.io/name',
  },
  otelCollector: {
    prometheusEndpoint: '0.0.0.0:8889',
    resourceAttributes: { cluster: 'k8s.cluster.name', namespace: 'k8s.namespace.name' },
  },
  grafanaDashboardsPath: '/var/lib/grafana/dashboards/forkwatch',
  probe: {
    job: 'forkwatch-probe',
    exporterAddress: '127.0.0.1:9465',
    module: 'default',
    interval: '30s',
    scrapeTimeout: '25s',
    targets: ['https://mcp.example.com/mcp'],
    alerts: {
      ForkwatchProbeNotResumable: { for: '5m' },
      ForkwatchProbeUntestable: { for: '30m' },
      ForkwatchProbeStale: { window: '1h', for: '5m' },
    },
  },
};
