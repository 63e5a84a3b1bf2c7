/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * ForkwatchTargetWithoutMetrics on a real blind process: two MCP servers in child processes preloaded with
 * `forkwatch/register`, scraped every second by Debian's Prometheus with the real rule files (`for` shortened in a
 * temporary copy). One is hand-written on node:http (no class forkwatch could patch, as tmcp or @hono/mcp's own
 * transport), the other the real SDK's. Idle, neither is paged; once both have answered MCP, the blind one is, and the
 * SDK's never.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { startFixture } from '../probe/fixtures/servers';
import {
  BIN,
  type PrometheusInstance,
  copyRuleFiles,
  leasePort,
  requireBinary,
  startPrometheus,
  waitUntil,
} from '../support/prometheus';
import { RawMcpSession } from '../support/raw-mcp-session';

const ROOT = join(__dirname, '../..');
const ALERTS_DIR = join(ROOT, 'alerts');
const REGISTER = join(ROOT, 'build/src/register.js');
const ALERT = 'ForkwatchTargetWithoutMetrics';
const INFO = METRICS.instrumentationInfo.prometheusName;
const JOB = 'mcp';

/** An MCP server fixture preloaded with forkwatch/register, its metrics on a port of its own. */
async function instrumented(file: string, args: string[] = []) {
  const metricsPort = await leasePort();
  const server = await startFixture(file, args, {
    nodeArgs: ['--import', REGISTER],
    env: { OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1', OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort) },
  });
  return { server, metrics: `127.0.0.1:${metricsPort}` };
}

const firingFor = async (prom: PrometheusInstance) =>
  (await prom.alerts()).filter(a => a.labels.alertname === ALERT).map(a => `${a.labels.instance} ${a.state}`);

describe.sequential('ForkwatchTargetWithoutMetrics on real processes (Prometheus from Debian, on loopback)', () => {
  test('a hand-written MCP server forkwatch cannot judge raises it once it has traffic; the SDK server never', {
    timeout: 120_000,
  }, async () => {
    requireBinary(BIN.prometheus);
    const cleanup: (() => Promise<void>)[] = [];
    try {
      const blind = await instrumented('../../alerts/fixtures/blind-mcp-server.mjs');
      cleanup.push(() => blind.server.stop());
      const sdk = await instrumented('sdk-server.mjs', ['--store', 'validating']);
      cleanup.push(() => sdk.server.stop());
      const rulesDir = await mkdtemp(join(tmpdir(), 'forkwatch-rules-'));
      cleanup.push(() => rm(rulesDir, { recursive: true, force: true }));
      await copyRuleFiles(
        ['forkwatch-recording.rules.yml', 'forkwatch-alerts.rules.yml'].map(f => join(ALERTS_DIR, f)),
        rulesDir,
        { forOverride: '2s' },
      );
      const prom = await startPrometheus({
        config: {
          global: { scrape_interval: '1s', evaluation_interval: '1s' },
          scrape_configs: [{ job_name: JOB, static_configs: [{ targets: [blind.metrics, sdk.metrics] }] }],
        },
        rulesDir,
      });
      cleanup.push(() => prom.stop());
      await waitUntil(async () => (await prom.query(`${INFO}{sdk_class="unjudged"}`)).length === 2, {
        timeoutMs: 30_000,
        what: 'the first scrapes of both servers',
      });

      // Idle: the blind process has judged nothing (none = 1) and served nothing; ten evaluations past `for`.
      const idleUntil = Date.now() + 12_000;
      while (Date.now() < idleUntil) {
        expect(await firingFor(prom)).toEqual([]);
        await new Promise(r => setTimeout(r, 1000));
      }
      expect((await prom.query(`${INFO}{sdk_class="none", instance="${blind.metrics}"}`))[0]?.value).toBe(1);

      for (const server of [blind.server, sdk.server]) {
        const session = new RawMcpSession(server.url);
        await session.initialize();
        await session.request('tools/list');
      }
      await waitUntil(async () => (await firingFor(prom)).includes(`${blind.metrics} firing`), {
        timeoutMs: 60_000,
        what: `${ALERT} firing for the blind server`,
      });
      expect(await firingFor(prom)).toEqual([`${blind.metrics} firing`]);
      const unjudged = await prom.query(`${INFO}{sdk_class="unjudged"}`);
      expect(Object.fromEntries(unjudged.map(s => [s.metric.instance, s.value]))).toEqual({
        [blind.metrics]: 1,
        [sdk.metrics]: 0,
      });
      // The SDK server's transport class is patched; the blind one has no class at all.
      const patched = await prom.query(`${INFO}{sdk_class=~".*ServerTransport"} == 1`);
      expect(patched.map(s => s.metric.instance)).toContain(sdk.metrics);
      expect(patched.map(s => s.metric.instance)).not.toContain(blind.metrics);
    } finally {
      for (const fn of cleanup.reverse()) await fn().catch(() => undefined);
    }
  });
});
