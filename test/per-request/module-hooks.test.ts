/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch finds the 2.x per-request classes by its module hooks alone, in a real process started with
 * `forkwatch/register` (CommonJS `--require` and ESM `--import`): a cut mid-call and its re-issue, then a publish
 * with no listener, scraped from the Prometheus endpoint. Nothing is written to stdout.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { leasePort } from '../support/prometheus';
import { sampleOne } from '../support/scrape';

const root = join(__dirname, '../..');
const register = join(root, 'build/src/register.js');
const fixtures = join(__dirname, 'fixtures');

async function runApp(flag: '--require' | '--import', file: string) {
  const port = await leasePort();
  const child = spawn(process.execPath, [flag, flag === '--import' ? pathToFileURL(register).href : register, file], {
    cwd: fixtures,
    env: { ...process.env, OTEL_EXPORTER_PROMETHEUS_PORT: String(port), OTEL_TRACES_EXPORTER: 'none' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', c => (stdout += c));
  const done = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', c => {
      stderr += c;
      if (/DONE \d+/.test(stderr)) resolve();
    });
    child.on('exit', code => reject(new Error(`app exited ${code}: ${stderr}`)));
  });
  try {
    await done;
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return { metrics, stdout, stderr };
  } finally {
    child.kill('SIGKILL');
  }
}

describe.each([
  ['CommonJS', '--require', 'modern-app.cjs'],
  ['ESM', '--import', 'modern-app.mjs'],
] as const)('%s app with forkwatch/register', (_label, flag, file) => {
  test('the per-request signals of a cut, its re-issue and a publish without listener', async () => {
    const { metrics, stdout, stderr } = await runApp(flag, file);
    expect(stderr).toContain('DONE 2'); // ground truth: the tool ran twice
    expect(stdout).toBe('');
    const m = (name: string, labels: Record<string, string> = {}) => sampleOne(metrics, name, labels);
    expect(m(METRICS.serverExchanges.prometheusName, { outcome: 'closed_before_response' })).toBe(1);
    expect(m(METRICS.serverExchanges.prometheusName, { outcome: 'delivered' })).toBe(2); // discover + re-issue
    expect(m(METRICS.serverLateMessages.prometheusName, { kind: 'result' })).toBe(1);
    expect(m(METRICS.serverProbableReissues.prometheusName, { idempotency: 'not_idempotent' })).toBe(1);
    expect(m(METRICS.serverListenPublishes.prometheusName, { outcome: 'no_listener' })).toBe(1);
    expect(m(METRICS.clientExchanges.prometheusName, { outcome: 'broken' })).toBe(1);
    expect(m(METRICS.clientReissues.prometheusName, { outcome: 'reissued' })).toBe(1);
  }, 30_000);
});
