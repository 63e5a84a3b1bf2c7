/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The end-to-end fixture: the fork lab in its forked and its healthy scenario, each as its own scrape job, scraped
 * every second by a real Prometheus that loads the alerting pack's rules, with the scenarios run repeatedly so
 * rate() has data; and forkwatch exporter probing a real SDK server through the pack's own scrape jobs (the probe
 * row).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LabScenario, type LabTarget, startLabTarget } from '../support/lab-target';
import { type PrometheusInstance, copyRuleFiles, startPrometheus, waitUntil } from '../support/prometheus';
import type { Server } from 'node:http';
import { resolveConfig } from '../../pack/config/resolve';
import { probeScrapeConfig } from '../../pack/outputs/probe-exporter';
import { parseConfig } from '../../src/cli/exporter/config';
import { createExporter, listen } from '../../src/cli/exporter/server';
import { type FixtureServer, startFixture } from '../probe/fixtures/servers';
import { ruleFilePaths } from './rule-files';

export const LAB_JOBS: Record<LabScenario, string> = {
  forked: 'forkwatch-lab-forked',
  healthy: 'forkwatch-lab-healthy',
};

export interface E2eRun {
  prometheus: PrometheusInstance;
  labs: Record<LabScenario, LabTarget>;
  /** Unix seconds: shortly before the first scenario run, and after the last one was scraped and evaluated. */
  start: number;
  end: number;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));
const now = () => Date.now() / 1000;

export async function startE2eRun({ runs = 6, everyMs = 3_000 } = {}): Promise<E2eRun> {
  const labs = { forked: await startLabTarget('forked'), healthy: await startLabTarget('healthy') };
  const rulesDir = await mkdtemp(join(tmpdir(), 'forkwatch-dashboard-rules-'));
  let prometheus: PrometheusInstance | undefined;
  let probed: FixtureServer | undefined;
  let exporter: Server | undefined;
  const stop = async () => {
    await prometheus?.stop();
    exporter?.closeAllConnections();
    await new Promise(resolve => (exporter ? exporter.close(resolve) : resolve(undefined)));
    await probed?.stop();
    await Promise.all(Object.values(labs).map(l => l.stop()));
    await rm(rulesDir, { recursive: true, force: true });
  };
  try {
    // The run lasts seconds, so alerts must not wait out their `for:`: the dashboard is under test, not the alerts.
    await copyRuleFiles(ruleFilePaths(), rulesDir, { forOverride: '0s' });
    probed = await startFixture('sdk-server.mjs', ['--store', 'validating']);
    exporter = await listen(
      createExporter({ config: parseConfig({ modules: { default: { timeoutMs: 1000, resumes: 2 } } }) }),
      '127.0.0.1',
      0,
    );
    const exporterAddress = `127.0.0.1:${(exporter.address() as { port: number }).port}`;
    const probeJobs = probeScrapeConfig(
      resolveConfig({ probe: { exporterAddress, targets: [probed.url], interval: '5s', scrapeTimeout: '4s' } }),
    ).scrape_configs as Record<string, unknown>[];
    prometheus = await startPrometheus({
      config: {
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        scrape_configs: [
          ...(Object.keys(labs) as LabScenario[]).map(scenario => ({
            job_name: LAB_JOBS[scenario],
            static_configs: [{ targets: [labs[scenario].address] }],
          })),
          ...probeJobs,
        ],
      },
      rulesDir,
    });
    const p = prometheus;
    await waitUntil(async () => (await p.query('sum(up{job=~"forkwatch-lab-.*"})'))[0]?.value === 2, {
      what: 'both lab targets up',
    });
    await sleep(3_000); // a baseline of zeros before the first run
    const start = Math.floor(now()) - 2;
    for (let i = 0; i < runs; i++) {
      await Promise.all([labs.forked.runScenario(), labs.healthy.runScenario()]);
      await sleep(everyMs);
    }
    await sleep(2_500); // the last scrape and rule evaluation
    return { prometheus: p, labs, start, end: Math.ceil(now()), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
