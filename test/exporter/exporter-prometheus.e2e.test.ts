/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real Prometheus scrapes the built `forkwatch exporter` with the pack's generated scrape job (blackbox-style
 * relabeling) against two real SDK servers: a healthy one instrumented by forkwatch (Prometheus scrapes its own
 * metrics too, with the pack's rules loaded) and the SDK example store with getStreamIdForEventId. The healthy
 * server's forkwatch metrics must raise no alert, not even pending, while the probe hits it every few seconds; the
 * broken one must be found not resumable; the exporter's memory must stay flat.
 *
 * FORKWATCH_EXPORTER_SOAK_MS sets how long Prometheus scrapes (default 60 s; the ≥10-minute soak in docs/probe.md
 * ran this file with 660000), FORKWATCH_EXPORTER_SOAK_INTERVAL the probe interval (default 10s).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resolveConfig } from '../../pack/config/resolve';
import { probeScrapeConfig } from '../../pack/outputs/probe-exporter';
import { builtCli } from '../probe/fixtures/built-cli';
import { ESM_HOOKS, type FixtureServer, startFixture } from '../probe/fixtures/servers';
import { type PrometheusInstance, leasePort, startPrometheus, waitUntil } from '../support/prometheus';

const SOAK_MS = Number(process.env.FORKWATCH_EXPORTER_SOAK_MS ?? 60_000);
const INTERVAL = process.env.FORKWATCH_EXPORTER_SOAK_INTERVAL ?? '10s';
/** A broken target costs about three step timeouts (1 s here): the scrape timeout must leave room for them. */
const SCRAPE_TIMEOUT = '8s';
const ALERTS_DIR = join(__dirname, '../../alerts');

let healthy: FixtureServer;
let broken: FixtureServer;
let exporter: ChildProcess;
let exporterAddress: string;
let prometheus: PrometheusInstance;
let metricsPort: number;
const dir = mkdtempSync(join(tmpdir(), 'forkwatch-exporter-e2e-'));
const rss: Array<{ at: number; bytes: number }> = [];

async function startExporter(configFile: string, port: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [builtCli(), 'exporter', '--config', configFile, '--listen', `127.0.0.1:${port}`],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', c => (stderr += String(c)));
  await waitUntil(() => stderr.includes('listening on'), { timeoutMs: 15_000, what: `exporter start: ${stderr}` });
  return child;
}

beforeAll(async () => {
  metricsPort = await leasePort();
  [healthy, broken] = await Promise.all([
    startFixture('instrumented-server.mjs', ['--store', 'validating'], {
      nodeArgs: ESM_HOOKS,
      env: { FORKWATCH_METRICS_PORT: String(metricsPort) },
    }),
    startFixture('sdk-server.mjs', ['--store', 'sdk-example-lookup']),
  ]);
  const configFile = join(dir, 'exporter.json');
  writeFileSync(configFile, JSON.stringify({ modules: { default: { timeoutMs: 1000, resumes: 4 } }, concurrency: 2 }));
  const port = await leasePort();
  exporterAddress = `127.0.0.1:${port}`;
  exporter = await startExporter(configFile, port);

  const rulesDir = join(dir, 'rules');
  mkdirSync(rulesDir);
  for (const file of ['forkwatch-recording.rules.yml', 'forkwatch-alerts.rules.yml'])
    await cp(join(ALERTS_DIR, file), join(rulesDir, file));
  const scrape = probeScrapeConfig(
    resolveConfig({
      probe: { exporterAddress, targets: [healthy.url, broken.url], interval: INTERVAL, scrapeTimeout: SCRAPE_TIMEOUT },
    }),
  ).scrape_configs as Record<string, unknown>[];
  prometheus = await startPrometheus({
    config: {
      global: { scrape_interval: INTERVAL, evaluation_interval: INTERVAL },
      scrape_configs: [...scrape, { job_name: 'mcp', static_configs: [{ targets: [`127.0.0.1:${metricsPort}`] }] }],
    },
    rulesDir,
  });
}, 120_000);

afterAll(async () => {
  await prometheus?.stop();
  if (exporter && exporter.exitCode === null) {
    const exited = new Promise(resolve => exporter.once('exit', resolve));
    exporter.kill('SIGTERM');
    await exited;
  }
  await Promise.all([healthy?.stop(), broken?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('forkwatch exporter scraped by a real Prometheus', () => {
  test(
    'healthy: resumable and no forkwatch alert at all; broken: not resumable; exporter memory flat',
    async () => {
      const forkwatchAlerts = async () =>
        (await prometheus.alerts()).filter(a => a.labels.alertname?.startsWith('Forkwatch'));
      const healthyAlerts: string[] = [];
      const end = Date.now() + SOAK_MS;
      while (Date.now() < end) {
        await new Promise(resolve => setTimeout(resolve, Math.min(10_000, SOAK_MS / 6)));
        const [own] = await prometheus.query(`process_resident_memory_bytes{job="forkwatch-probe-exporter"}`);
        if (own) rss.push({ at: Date.now(), bytes: own.value });
        for (const a of await forkwatchAlerts())
          if (a.labels.job === 'mcp' || a.labels.instance === healthy.url)
            healthyAlerts.push(`${a.labels.alertname} ${a.state} ${a.labels.instance ?? ''}`);
      }
      const verdict = async (url: string, v: string) =>
        (await prometheus.query(`forkwatch_probe_verdict{instance="${url}", verdict="${v}"}`))[0]?.value;
      expect(await verdict(healthy.url, 'resumable')).toBe(1);
      expect(await verdict(broken.url, 'not_resumable')).toBe(1);
      // Every probe of the run, not only the last: the healthy target never failed, the broken one never passed.
      const window = `${Math.ceil(SOAK_MS / 1000)}s`;
      const [healthyMin] = await prometheus.query(
        `min_over_time(forkwatch_probe_success{instance="${healthy.url}"}[${window}])`,
      );
      const [brokenMax] = await prometheus.query(
        `max_over_time(forkwatch_probe_success{instance="${broken.url}"}[${window}])`,
      );
      expect(healthyMin?.value).toBe(1);
      expect(brokenMax?.value).toBe(0);
      const [standalone] = await prometheus.query(
        `forkwatch_probe_stream_verdict{instance="${broken.url}", stream="standalone", verdict="not_resumable"}`,
      );
      expect(standalone?.value).toBe(1);

      // The healthy server saw the probe's deliberate refusals, counted apart, and real traffic of its replays.
      const [probeRejected] = await prometheus.query(
        'sum(forkwatch_server_resumes_total{job="mcp", outcome="probe_rejected"})',
      );
      const [rejected] = await prometheus.query(
        'sum(forkwatch_server_resumes_total{job="mcp", outcome=~"rejected|unknown_cursor"})',
      );
      expect(probeRejected!.value).toBeGreaterThan(0);
      expect(rejected!.value).toBe(0);
      // No forkwatch alert, not even pending, for the healthy server's own metrics or its probe.
      expect(healthyAlerts).toEqual([]);
      // The broken endpoint's probe alert is on its way (pending for its 5m `for`, or firing on a long soak).
      const brokenAlert = (await forkwatchAlerts()).find(
        a => a.labels.alertname === 'ForkwatchProbeNotResumable' && a.labels.instance === broken.url,
      );
      expect(brokenAlert?.state).toMatch(/pending|firing/);
      // Every rule evaluates cleanly against these series.
      for (const group of await prometheus.rules())
        for (const rule of group.rules) expect(rule.health, `${rule.name}: ${rule.lastError ?? ''}`).toBe('ok');

      // Flat memory: the last sample within 30 % (and 40 MB) of the first after warm-up; printed for the soak report.
      // The very first sample comes before the exporter's first probes grew its heap to its working size: Node 24's
      // V8 settles about 30 MB higher than Node 20's (57.6 MB, then 90.6 to 110.6 MB over the minute, seen in CI).
      expect(rss.length).toBeGreaterThanOrEqual(3);
      const first = rss[1]!.bytes;
      const last = rss.at(-1)!.bytes;
      process.stdout.write(
        `exporter RSS (MB) over ${Math.round(SOAK_MS / 1000)} s: ${rss.map(r => (r.bytes / 1e6).toFixed(1)).join(' ')}\n`,
      );
      expect(last).toBeLessThan(Math.max(first * 1.3, first + 40e6));
    },
    SOAK_MS + 120_000,
  );
});
