/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * End to end on 127.0.0.1: the fork lab exports forkwatch's metrics; Debian's Prometheus scrapes it every second with
 * the real rule files loaded (`for` shortened in a temporary copy); Debian's Alertmanager, routed like
 * alerts/alertmanager.example.yml, delivers to a webhook receiver. Forked scenario: the fork alerts reach the webhook
 * (the ticket for the forks, the page for the loss budget). Healthy scenario: nothing fires.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, test } from 'vitest';
import { ruleFiles } from '../../pack/alerts/rule-files';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { FORK_REASONS } from '../../src/core/verdict';
import { CLIENT_TRANSPORTS } from '../../src/shared/names';
import { type LabScenario, type LabTarget, startLabTarget } from '../support/lab-target';
import {
  type AlertmanagerInstance,
  BIN,
  type PrometheusInstance,
  type WebhookReceiver,
  copyRuleFiles,
  requireBinary,
  startAlertmanager,
  startPrometheus,
  startWebhookReceiver,
  waitUntil,
} from '../support/prometheus';
import { DASHBOARD_URL, RUNBOOK_URL_PREFIX, loadRunbooks, runbookPromQL } from './rules-lint';

const ALERTS_DIR = join(__dirname, '../../alerts');
const JOB = 'forkwatch-lab';
/** absent() is true until the first scrape lands: its shortened `for` must still outlast Prometheus' start. */
const shortFor = (alert: string) => (alert === 'ForkwatchMetricsAbsent' ? '10s' : '2s');

interface Stack {
  lab: LabTarget;
  prom: PrometheusInstance;
  am: AlertmanagerInstance;
  webhook: WebhookReceiver;
  stop(): Promise<void>;
}

type Route = { routes?: Route[]; [k: string]: unknown };
const fastRoute = (r: Route): Route => ({
  ...r,
  group_wait: '1s',
  group_interval: '1s',
  repeat_interval: '1h',
  ...(r.routes ? { routes: r.routes.map(fastRoute) } : {}),
});

/** The example's routing tree and inhibitions, fast timers, every receiver a webhook at <receiver>/<name>. */
function alertmanagerConfig(webhookUrl: string): Record<string, unknown> {
  const example = parse(readFileSync(join(ALERTS_DIR, 'alertmanager.example.yml'), 'utf8')) as {
    route: Route;
    inhibit_rules: unknown[];
    receivers: { name: string }[];
  };
  return {
    route: fastRoute(example.route),
    inhibit_rules: example.inhibit_rules,
    receivers: example.receivers.map(r => ({
      name: r.name,
      webhook_configs: [{ url: `${webhookUrl}/${r.name}`, send_resolved: false }],
    })),
  };
}

async function startStack(scenario: LabScenario): Promise<Stack> {
  for (const bin of [BIN.prometheus, BIN.promtool, BIN.alertmanager, BIN.amtool]) requireBinary(bin);
  const cleanup: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const fn of cleanup.reverse()) await fn().catch(() => undefined);
  };
  try {
    const lab = await startLabTarget(scenario);
    cleanup.push(() => lab.stop());
    const webhook = await startWebhookReceiver();
    cleanup.push(() => webhook.stop());
    const am = await startAlertmanager({ config: alertmanagerConfig(webhook.url) });
    cleanup.push(() => am.stop());
    const rulesDir = await mkdtemp(join(tmpdir(), 'forkwatch-rules-'));
    cleanup.push(() => rm(rulesDir, { recursive: true, force: true }));
    await copyRuleFiles(
      ['forkwatch-recording.rules.yml', 'forkwatch-alerts.rules.yml'].map(f => join(ALERTS_DIR, f)),
      rulesDir,
      { forOverride: shortFor },
    );
    const prom = await startPrometheus({
      config: {
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        scrape_configs: [{ job_name: JOB, static_configs: [{ targets: [lab.address] }] }],
        alerting: { alertmanagers: [{ static_configs: [{ targets: [am.address] }] }] },
      },
      rulesDir,
    });
    cleanup.push(() => prom.stop());
    // The counters' zero samples must be in the TSDB before anything happens, as with a long-running target.
    await waitUntil(async () => (await prom.query(`forkwatch_client_forks_total{job="${JOB}"}`)).length > 0, {
      timeoutMs: 15_000,
      what: 'the first scrape of the lab target',
    });
    return { lab, prom, am, webhook, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Runs the scenario once a second until `done` holds (or the time is up). */
async function drive(stack: Stack, done: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await stack.lab.runScenario();
    const next = Date.now() + 1000;
    while (Date.now() < next) {
      if (await done()) return true;
      await new Promise(r => setTimeout(r, 200));
    }
  }
  return done();
}

const delivered = (stack: Stack, receiver: string) =>
  stack.webhook.received
    .filter(n => n.path === `/${receiver}`)
    .flatMap(n => n.payload.alerts.filter(a => a.status === 'firing'));

async function expectRulesHealthy(prom: PrometheusInstance) {
  const rules = (await prom.rules()).flatMap(g => g.rules);
  const inFiles = ['forkwatch-recording.rules.yml', 'forkwatch-alerts.rules.yml'].flatMap(f =>
    (parse(readFileSync(join(ALERTS_DIR, f), 'utf8')) as { groups: { rules: unknown[] }[] }).groups.flatMap(
      g => g.rules,
    ),
  );
  // The committed files are what the pack renders for its defaults (test/alerts/outputs.test.ts): all of them load.
  expect(inFiles.length).toBe(ruleFiles(DEFAULT_CONFIG).flatMap(f => f.groups.flatMap(g => g.rules)).length);
  expect(rules.length).toBe(inFiles.length);
  expect(rules.filter(r => r.health !== 'ok').map(r => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual([]);
}

// One stack at a time: two Prometheus + Alertmanager + lab stacks at once overload a 2-core machine.
describe.sequential('alerting end to end (Prometheus + Alertmanager from Debian, on loopback)', () => {
  test('forked: the fork ticket and the loss-budget page reach the webhook', { timeout: 90_000 }, async () => {
    const stack = await startStack('forked');
    try {
      const arrived = await drive(
        stack,
        () =>
          delivered(stack, 'ticket').some(a => a.labels.alertname === 'ForkwatchForksDetected') &&
          delivered(stack, 'page').some(a => a.labels.alertname === 'ForkwatchResumeLossBudgetBurn'),
        45_000,
      );
      const summary = stack.webhook.received.map(
        n => `${n.path}: ${n.payload.alerts.map(a => a.labels.alertname).join(',')}`,
      );
      expect(
        arrived,
        `webhook got:\n${summary.join('\n')}\nprometheus alerts: ${JSON.stringify(await stack.prom.alerts())}`,
      ).toBe(true);

      const ticket = delivered(stack, 'ticket');
      const page = delivered(stack, 'page');
      // Routing: pages are critical, tickets are warnings, and only forkwatch alerts were sent.
      expect(page.every(a => a.labels.severity === 'critical')).toBe(true);
      expect(ticket.every(a => a.labels.severity === 'warning')).toBe(true);
      expect([...page, ...ticket].every(a => a.labels.alertname?.startsWith('Forkwatch'))).toBe(true);

      const fork = ticket.find(a => a.labels.alertname === 'ForkwatchForksDetected')!;
      expect(Object.keys(fork.labels).sort()).toEqual(['alertname', 'job', 'reason', 'severity', 'transport']);
      expect(fork.labels.job).toBe(JOB);
      expect(CLIENT_TRANSPORTS).toContain(fork.labels.transport);
      expect(FORK_REASONS).toContain(fork.labels.reason);
      expect(fork.annotations.summary).toBe('MCP stream resumes forked the session event log.');
      expect(fork.annotations.description).toMatch(
        new RegExp(
          `^${JOB}: \\d+ resumed ${fork.labels.transport} stream\\(s\\) forked \\(reason ${fork.labels.reason}\\) in the last 10 minutes;`,
        ),
      );
      expect(fork.annotations.runbook_url).toBe(`${RUNBOOK_URL_PREFIX}ForkwatchForksDetected.md`);
      expect(fork.annotations.dashboard_url).toBe(DASHBOARD_URL);

      const burn = page.find(a => a.labels.alertname === 'ForkwatchResumeLossBudgetBurn')!;
      expect(burn.labels).toMatchObject({ job: JOB, severity: 'critical' });
      expect(['1h/5m', '6h/30m']).toContain(`${burn.labels.long}/${burn.labels.short}`);
      expect(burn.annotations.runbook_url).toBe(`${RUNBOOK_URL_PREFIX}ForkwatchResumeLossBudgetBurn.md`);

      // Prometheus and Alertmanager agree.
      const firing = (await stack.prom.alerts()).filter(a => a.state === 'firing').map(a => a.labels.alertname);
      expect(firing).toContain('ForkwatchForksDetected');
      expect(firing).toContain('ForkwatchResumeLossBudgetBurn');
      const active = (await stack.am.alerts()).filter(a => a.status.state === 'active').map(a => a.labels.alertname);
      expect(active).toContain('ForkwatchForksDetected');
      await expectRulesHealthy(stack.prom);

      // The runbooks' diagnosis queries run against a live Prometheus without errors, and most find data here.
      const queries = [...loadRunbooks(join(ALERTS_DIR, 'runbooks')).values()].flatMap(runbookPromQL);
      expect(queries.length).toBeGreaterThan(30);
      let withData = 0;
      for (const q of queries) {
        const result = await stack.prom.query(q).catch((err: unknown) => new Error(`${q}: ${String(err)}`));
        expect(result).not.toBeInstanceOf(Error);
        if ((result as unknown[]).length > 0) withData++;
      }
      expect(withData / queries.length).toBeGreaterThan(0.6);
      console.log(
        `forked scenario, delivered:\n${summary.join('\n')}\nrunbook queries with data: ${withData}/${queries.length}`,
      );
    } finally {
      await stack.stop();
    }
  });

  test('healthy: with the same traffic shape and no forks, nothing fires or reaches the webhook', {
    timeout: 90_000,
  }, async () => {
    const stack = await startStack('healthy');
    try {
      // Long enough for every shortened alert to have fired several times over (the forked run delivers in ~10 s).
      await drive(stack, () => false, 15_000);
      expect(await stack.prom.alerts()).toEqual([]);
      expect(stack.webhook.received).toEqual([]);
      expect(await stack.am.alerts()).toEqual([]);
      await expectRulesHealthy(stack.prom);
      // Silent because the resumes are lossless, not for lack of data: above the traffic floor, ratio 0.
      const floor = await stack.prom.query(
        `sum by (job) (increase(forkwatch_client_resumes_total{job="${JOB}", outcome=~"resumed|forked"}[1h])) >= 20`,
      );
      expect(floor.map(s => s.metric.job)).toEqual([JOB]);
      const loss = await stack.prom.query(`job:forkwatch_client_resume_loss:ratio_rate5m{job="${JOB}"}`);
      expect(loss.map(s => s.value)).toEqual([0]);
      const resumed = await stack.prom.query(`job:forkwatch_client_resumes:rate5m{job="${JOB}", outcome="resumed"}`);
      expect(resumed.filter(s => s.value > 0)).toHaveLength(1);
    } finally {
      await stack.stop();
    }
  });
});
