/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Lints alerts/*.rules.yml and alerts/runbooks/ against what forkwatch really exports: the metric families come from
 * a scrape of the instrumented fork lab (test/support/lab-target.ts) and of a per-request run (its two client
 * histograms), not from a list.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { ATTR, METRICS, SPAN, SPAN_EVENT } from '../../src/shared/names';
import { perRequestScrape } from '../per-request/support';
import { startLabTarget } from '../support/lab-target';
import { analyzePromQL } from '../support/promql';
import { seconds } from '../../pack/config/units';
import { scrapeExporter } from '../support/probe-scrape';
import { type MetricFamily, parseMetricFamilies, scrapeMetricFamilies } from '../support/scrape';
import {
  DASHBOARD_URL,
  RUNBOOK_URL_PREFIX,
  type LintInput,
  type Problem,
  type RuleFile,
  lintRules,
  loadRuleFiles,
  loadRunbooks,
} from './rules-lint';

const ALERTS_DIR = join(__dirname, '../../alerts');
const RUNBOOKS_DIR = join(ALERTS_DIR, 'runbooks');
const TRACE_NAMES = new Set<string>([
  ...Object.values(SPAN),
  ...Object.values(SPAN_EVENT),
  ...Object.values(ATTR),
  ...Object.values(METRICS).map(m => m.otelName),
]);

let families: Map<string, MetricFamily>;
let perRequest: Map<string, MetricFamily>;
let input: LintInput;
/** Recorded only on 2026-07-28 per-request traffic, which the fork lab does not run. */
const PER_REQUEST_HISTOGRAMS = [METRICS.clientReissueDelaySeconds, METRICS.clientListenGapSeconds];

beforeAll(async () => {
  const lab = await startLabTarget('forked');
  try {
    await lab.runScenario();
    families = await scrapeMetricFamilies(lab.metricsUrl);
  } finally {
    await lab.stop();
  }
  // The probe group reads forkwatch exporter's series: a real scrape of it joins the lab's.
  for (const [name, family] of parseMetricFamilies(await scrapeExporter())) families.set(name, family);
  // The 2026-07-28 client histograms have no series in the fork lab (no per-request traffic): a real per-request run
  // on the 2.x packages records them (a re-issue, a listen gap), and its scrape gives the lint their families as
  // forkwatch exports them, never as names.ts declares them (issue 47).
  perRequest = parseMetricFamilies(await perRequestScrape());
  for (const spec of PER_REQUEST_HISTOGRAMS) {
    const family = perRequest.get(spec.prometheusName);
    if (family !== undefined && !families.has(spec.prometheusName)) families.set(spec.prometheusName, family);
  }
  input = { files: loadRuleFiles(ALERTS_DIR), families, runbooks: loadRunbooks(RUNBOOKS_DIR), traceNames: TRACE_NAMES };
}, 120_000);

const show = (problems: Problem[]) => problems.map(p => `[${p.check}] ${p.where}: ${p.message}`).join('\n');

describe('the scrape the lint trusts', () => {
  test('the per-request scrape recorded both 2026-07-28 client histograms, which the fork lab has no series of', () => {
    for (const spec of PER_REQUEST_HISTOGRAMS) {
      expect(perRequest.get(spec.prometheusName)?.type, spec.prometheusName).toBe('histogram');
      expect(families.get(spec.prometheusName), spec.prometheusName).toBe(perRequest.get(spec.prometheusName));
    }
  });

  test('has every forkwatch family with its type, histogram series and the label values of the contract', () => {
    // Recorded when a run of empty reconnects ends (test/revived/reconnect-storms.test.ts records one): the fork lab
    // has no storm.
    const notInTheseScrapes = new Set<string>([METRICS.clientEmptyReconnectStreak.prometheusName]);
    for (const spec of Object.values(METRICS)) {
      if (notInTheseScrapes.has(spec.prometheusName)) continue;
      const f = families.get(spec.prometheusName);
      expect(f, spec.prometheusName).toBeDefined();
      expect(f!.type).toBe(spec.kind);
      if (spec.kind === 'histogram') {
        for (const s of ['_bucket', '_sum', '_count']) expect(f!.seriesNames).toContain(spec.prometheusName + s);
      }
      for (const [label, values] of Object.entries(spec.labels)) {
        const scraped = [...(f!.labels.get(label) ?? [])].sort();
        // Counters export every combination at 0; the info gauge only what this process patched.
        if (spec.kind === 'gauge') {
          expect(scraped.length, `${spec.prometheusName}{${label}}`).toBeGreaterThan(0);
          for (const v of scraped) expect(values, `${spec.prometheusName}{${label}="${v}"}`).toContain(v);
        } else expect(scraped, `${spec.prometheusName}{${label}}`).toEqual([...values].sort());
      }
    }
  });
});

describe('alerts/*.rules.yml and alerts/runbooks', () => {
  test('lint clean: syntax, exported metric names and label values, rate() over counters, conventions, runbooks', () => {
    const problems = lintRules(input);
    expect(show(problems)).toBe('');
  });

  test('every expression parses with @prometheus-io/lezer-promql and only names scraped or recorded series', () => {
    const recorded = new Set(
      input.files.flatMap(f => f.groups.flatMap(g => g.rules.map(r => r.record))).filter(Boolean),
    );
    let selectors = 0;
    for (const file of input.files) {
      for (const group of file.groups) {
        for (const rule of group.rules) {
          const a = analyzePromQL(rule.expr);
          expect(a.errors, `${rule.alert ?? rule.record}`).toEqual([]);
          for (const sel of a.selectors) {
            selectors++;
            if (sel.name === undefined) continue; // {__name__=~...}: checked by the lint
            const scraped = [...families.values()].some(f => f.seriesNames.has(sel.name!));
            expect(
              scraped || recorded.has(sel.name) || sel.name === 'up',
              `${rule.alert ?? rule.record}: ${sel.name}`,
            ).toBe(true);
          }
        }
      }
    }
    expect(selectors).toBeGreaterThan(40);
  });

  test('the recording rules shared with the dashboards exist with exactly the agreed expressions', () => {
    const byName = new Map(input.files.flatMap(f => f.groups.flatMap(g => g.rules)).map(r => [r.record ?? r.alert, r]));
    const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
    const by = 'cluster, namespace, job';
    const agreed: Record<string, string> = {
      'job:forkwatch_client_resumes:rate5m': `sum by (${by}, transport, outcome) (rate(forkwatch_client_resumes_total[5m]))`,
      'job:forkwatch_client_forks:rate5m': `sum by (${by}, transport, reason) (rate(forkwatch_client_forks_total[5m]))`,
      'job:forkwatch_client_duplicate_events:rate5m': `sum by (${by}, transport) (rate(forkwatch_client_duplicate_events_total[5m]))`,
      'job_instance:forkwatch_server_resumes:rate5m': `sum by (${by}, instance, outcome) (rate(forkwatch_server_resumes_total[5m]))`,
      'job:forkwatch_client_resume_gap_seconds_bucket:rate5m': `sum by (${by}, le) (rate(forkwatch_client_resume_gap_seconds_bucket[5m]))`,
      'job:forkwatch_server_resume_gap_events_bucket:rate5m': `sum by (${by}, le) (rate(forkwatch_server_resume_gap_events_bucket[5m]))`,
    };
    for (const [record, expr] of Object.entries(agreed))
      expect(norm(byName.get(record)?.expr ?? ''), record).toBe(expr);
    for (const w of ['5m', '30m', '1h', '2h', '6h', '1d', '3d']) {
      // unverified, rejected and failed are on neither side of the client SLI.
      expect(norm(byName.get(`job:forkwatch_client_resume_loss:ratio_rate${w}`)?.expr ?? ''), w).toBe(
        `sum by (${by}) (rate(forkwatch_client_resumes_total{outcome=~"forked"}[${w}])) / ` +
          `sum by (${by}) (rate(forkwatch_client_resumes_total{outcome=~"resumed|forked"}[${w}]))`,
      );
      // abandoned is not loss; with a shared store, the fleet balance (clamped at 0) adds what no replica replayed,
      // replays counted over the window plus sharedStoreReplayLag (5m).
      const judged = `sum by (${by}) (increase(forkwatch_server_undelivered_events_total{reason=~"stream_moved|no_listener|dropped"}[${w}]))`;
      const stored = `sum by (${by}) (increase(forkwatch_server_shared_unreplayed_events_total[${w}]))`;
      const lagged = `${seconds(w) + 300}s`;
      const elsewhere = `sum by (${by}) (increase(forkwatch_server_replayed_unpending_events_total[${lagged}]))`;
      // Issue 49: the fleet's delivery marks, each event claimed by one replica, add as they are.
      const fleet = `sum by (${by}) (increase(forkwatch_server_fleet_undelivered_events_total[${w}]))`;
      expect(norm(byName.get(`job:forkwatch_server_undelivered_loss:ratio_rate${w}`)?.expr ?? ''), w).toBe(
        `( ${judged} + ( clamp_min( ${stored} - (${elsewhere} or ${stored} * 0), 0 ) or ${judged} * 0 ) + ` +
          `(${fleet} or ${judged} * 0) ) / ` +
          `sum by (${by}) (increase(forkwatch_server_events_total[${w}]))`,
      );
    }
  });

  test('the alert set: every alert named Forkwatch*, with severity, runbook and dashboard links', () => {
    const alerts = input.files.flatMap(f => f.groups.flatMap(g => g.rules)).filter(r => r.alert);
    const names = [...new Set(alerts.map(a => a.alert))].sort();
    expect(names).toEqual([
      'ForkwatchClientExchangesReissued',
      'ForkwatchClientListenGapSecondsHigh',
      'ForkwatchClientListenStreamsDropped',
      'ForkwatchClientResultsLost',
      'ForkwatchCursorsDroppedAfterInconclusive',
      'ForkwatchDuplicateDeliveries',
      'ForkwatchForksDetected',
      'ForkwatchMetricsAbsent',
      'ForkwatchProbeNotResumable',
      'ForkwatchProbeStale',
      'ForkwatchProbeUntestable',
      'ForkwatchReconnectStorm',
      'ForkwatchResumeGapEventsHigh',
      'ForkwatchResumeGapSecondsHigh',
      'ForkwatchResumeLossBudgetBurn',
      'ForkwatchResumesRejected',
      'ForkwatchServerCompletedStreamResumed',
      'ForkwatchServerCrossSessionReplay',
      'ForkwatchServerCursorsIgnored',
      'ForkwatchServerDeliveryBudgetBurn',
      'ForkwatchServerDuplicateExecutionRisk',
      'ForkwatchServerEventsWithoutListener',
      'ForkwatchServerOrphanedTasks',
      'ForkwatchServerPublishesWithoutListener',
      'ForkwatchServerResultDeliveryBudgetBurn',
      'ForkwatchServerResumesRejected',
      'ForkwatchServerUnknownCursors',
      'ForkwatchSessionsRevived',
      'ForkwatchTargetWithoutMetrics',
    ]);
    for (const a of alerts) {
      expect(a.annotations?.dashboard_url).toBe(DASHBOARD_URL); // none: the defaults name no Grafana host
      expect(input.runbooks.has(`${a.alert}.md`), a.alert).toBe(true);
    }
    // Only the fast budget burns page, a cross-session replay (a data leak, lost events or not), and results the
    // client lost and did not re-issue (2026-07-28: the one page where the server may not hear the break).
    const critical = alerts.filter(a => a.labels?.severity === 'critical');
    expect(critical.map(a => `${a.alert} ${a.labels?.long}/${a.labels?.short}`)).toEqual([
      'ForkwatchResumeLossBudgetBurn 1h/5m',
      'ForkwatchResumeLossBudgetBurn 6h/30m',
      'ForkwatchServerCrossSessionReplay undefined/undefined',
      'ForkwatchServerDeliveryBudgetBurn 1h/5m',
      'ForkwatchServerDeliveryBudgetBurn 6h/30m',
      'ForkwatchServerResultDeliveryBudgetBurn 1h/5m',
      'ForkwatchServerResultDeliveryBudgetBurn 6h/30m',
      'ForkwatchClientResultsLost undefined/undefined',
    ]);
    // Nothing ever alerts on abandoned events (a client that went away for good).
    for (const a of alerts) expect(a.expr, a.alert).not.toMatch(/abandoned/);
  });
});

// The lint must catch what it claims to catch: feed it broken rules and runbooks.
describe('the lint itself', () => {
  const goodRunbook = (name: string) =>
    `# ${name}\n\n## Meaning\n\n\`for: 5m\` because.\n\n## Impact\n\n## Diagnosis\n\n\`\`\`promql\nup\n\`\`\`\n\n## Mitigation\n`;
  const alert = (over: Partial<RuleFile['groups'][number]['rules'][number]>) => ({
    alert: 'ForkwatchTestAlert',
    expr: 'sum by (job) (increase(forkwatch_client_forks_total[10m])) > 0',
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'Something happened.',
      description: '{{ $labels.job }} did it.',
      runbook_url: `${RUNBOOK_URL_PREFIX}ForkwatchTestAlert.md`,
      ...(DASHBOARD_URL ? { dashboard_url: DASHBOARD_URL } : {}),
    },
    ...over,
  });
  const lint = (
    rules: RuleFile['groups'][number]['rules'],
    runbooks = new Map([['ForkwatchTestAlert.md', goodRunbook('ForkwatchTestAlert')]]),
  ) => lintRules({ ...input, files: [{ file: 'test.rules.yml', groups: [{ name: 'test', rules }] }], runbooks });
  const checks = (problems: Problem[]) => problems.map(p => p.check);

  test('accepts a well-formed alert (the baseline the other cases break)', () => {
    expect(show(lint([alert({})]))).toBe('');
  });

  test.each([
    ['unknown-metric', 'sum(rate(forkwatch_client_fork_total[5m])) > 0'],
    ['unknown-metric', 'sum(rate(mcp_stream_fork_detected_total[5m])) > 0'],
    ['unknown-metric', 'absent({__name__=~"forkwatch_nothing_.+"})'],
    ['unknown-label', 'sum(rate(forkwatch_client_forks_total{outcome="forked"}[5m])) > 0'],
    ['unknown-label-value', 'sum(rate(forkwatch_server_resumes_total{outcome="unknown_cursors"}[5m])) > 0'],
    ['unknown-label-value', 'sum(rate(forkwatch_client_resumes_total{outcome=~"forked|gap_unrecoverable"}[5m])) > 0'],
    ['unknown-metric', 'sum(rate(forkwatch_client_resume_gap_seconds[5m])) > 0'], // a histogram has no bare series
    ['rate-non-counter', 'sum(rate(up[5m])) > 0'],
    ['rate-non-counter', 'sum(increase(target_info[5m])) > 0'],
    ['promql-syntax', 'sum(rate(forkwatch_client_forks_total[5m]) > 0'],
    ['promql-syntax', 'sum(rate(forkwatch_client_forks_total[$__rate_interval])) > 0'],
  ])('flags %s in %s', (check, expr) => {
    expect(checks(lint([alert({ expr })]))).toContain(check);
  });

  test('flags rate() over a recorded series, and an unknown value on a recorded series', () => {
    const record = {
      record: 'job:forkwatch_client_resumes:rate5m',
      expr: 'sum by (job, transport, outcome) (rate(forkwatch_client_resumes_total[5m]))',
    };
    expect(checks(lint([record, alert({ expr: 'sum(rate(job:forkwatch_client_resumes:rate5m[5m])) > 0' })]))).toContain(
      'rate-non-counter',
    );
    expect(
      checks(lint([record, alert({ expr: 'sum(job:forkwatch_client_resumes:rate5m{outcome="forkd"}) > 0' })])),
    ).toContain('unknown-label-value');
    expect(
      checks(lint([record, alert({ expr: 'sum(job:forkwatch_client_resumes:rate5m{reason="id_missing"}) > 0' })])),
    ).toContain('unknown-label');
    expect(checks(lint([{ record: 'forkwatch_resumes_rate', expr: 'up' }, alert({})]))).toContain('record-name');
  });

  test('flags missing or malformed annotations, labels and names', () => {
    const noAnn = (key: string) => {
      const a = alert({});
      delete (a.annotations as Record<string, string>)[key];
      return a;
    };
    expect(checks(lint([noAnn('summary')]))).toContain('alert-summary');
    expect(checks(lint([noAnn('description')]))).toContain('alert-description');
    expect(checks(lint([noAnn('runbook_url')]))).toContain('alert-runbook-url');
    const base = alert({}).annotations;
    // The defaults name no Grafana host: a dashboard_url there is a link to nowhere.
    const placeholder = 'https://grafana.example.com/d/forkwatch-overview/forkwatch-overview';
    expect(checks(lint([alert({ annotations: { ...base, dashboard_url: placeholder } })]))).toContain(
      'alert-dashboard-url',
    );
    expect(checks(lint([alert({ annotations: { ...base, summary: '{{ $labels.job }} forked.' } })]))).toContain(
      'alert-summary',
    );
    expect(checks(lint([alert({ annotations: { ...base, summary: 'no capital and no period' } })]))).toContain(
      'alert-summary',
    );
    expect(checks(lint([alert({ annotations: { ...base, description: 'Nothing templated.' } })]))).toContain(
      'alert-description',
    );
    expect(checks(lint([alert({ labels: { severity: 'page' } })]))).toContain('alert-severity');
    expect(checks(lint([alert({ labels: {} })]))).toContain('alert-severity');
    expect(checks(lint([alert({ alert: 'MCPStreamForkDetected' })]))).toContain('alert-name');
    expect(checks(lint([alert({ expr: 'absent(forkwatch_client_forks_total)', for: '30s' })]))).toContain(
      'alert-absent-for',
    );
    expect(
      checks(
        lint([
          alert({ annotations: { ...base, description: '{{ with query "sum(rate(nope_total[5m]))" }}x{{ end }}' } }),
        ]),
      ),
    ).toContain('unknown-metric');
  });

  test('flags a missing runbook, a runbook without its sections, PromQL or `for`, and an orphan runbook', () => {
    expect(checks(lint([alert({})], new Map()))).toContain('runbook');
    const rb = (text: string) => lint([alert({})], new Map([['ForkwatchTestAlert.md', text]]));
    expect(checks(rb(goodRunbook('ForkwatchTestAlert').replace('## Impact\n', '')))).toContain('runbook');
    expect(checks(rb(goodRunbook('ForkwatchTestAlert').replace('# ForkwatchTestAlert', '# Something')))).toContain(
      'runbook',
    );
    expect(checks(rb(goodRunbook('ForkwatchTestAlert').replace('```promql\nup\n```', 'run some queries')))).toContain(
      'runbook',
    );
    expect(checks(rb(goodRunbook('ForkwatchTestAlert').replace('for: 5m', 'a while')))).toContain('runbook');
    expect(
      checks(
        rb(
          goodRunbook('ForkwatchTestAlert').replace(
            '```promql\nup\n```',
            '```promql\nrate(forkwatch_nope_total[5m])\n```',
          ),
        ),
      ),
    ).toContain('unknown-metric');
    expect(
      checks(rb(`${goodRunbook('ForkwatchTestAlert')}\nLook at forkwatch.resume.verdikt on the span.\n`)),
    ).toContain('runbook-trace-name');
    const orphan = new Map([
      ['ForkwatchTestAlert.md', goodRunbook('ForkwatchTestAlert')],
      ['ForkwatchGone.md', goodRunbook('ForkwatchGone')],
    ]);
    expect(checks(lint([alert({})], orphan))).toContain('runbook-orphan');
  });
});
