/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The fork lab as a Prometheus scrape target, for the rule and dashboard end-to-end tests: a child process
 * (lab/target.mjs) with real SDK servers, the cutting proxy and a real SDK client, instrumented by forkwatch and
 * exporting through the real OpenTelemetry Prometheus exporter.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { leasePort } from '../../lab/port-lease.mjs';

export type LabScenario = 'forked' | 'healthy';

export interface LabTarget {
  /** http://127.0.0.1:<port>/metrics */
  metricsUrl: string;
  /** 127.0.0.1:<port>, for a Prometheus static_config. */
  address: string;
  /** Plays one more batch of sessions that lose their stream and resume; counters grow with every run. */
  runScenario(): Promise<void>;
  stop(): Promise<void>;
}

const labDir = join(__dirname, '../../lab');

export async function startLabTarget(scenario: LabScenario): Promise<LabTarget> {
  const metricsPort = await leasePort();
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', join(labDir, 'esm-hooks.mjs'), join(labDir, 'target.mjs')],
    {
      env: { ...process.env, LAB_TARGET: JSON.stringify({ scenario, metricsPort }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', c => (stderr += c));
  const controlPort = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`lab target did not start:\n${stderr}`)), 30_000);
    child.stdout!.on('data', chunk => {
      out += chunk;
      const m = /READY (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', code => reject(new Error(`lab target exited with ${code}:\n${stderr}`)));
  });
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  return {
    metricsUrl,
    address: `127.0.0.1:${metricsPort}`,
    async runScenario() {
      const res = await fetch(`http://127.0.0.1:${controlPort}/run`, { method: 'POST' });
      const { failed } = (await res.json()) as { failed: string[] };
      if (failed.length > 0) throw new Error(`lab sessions failed: ${failed.join('; ')}`);
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise(resolve => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
