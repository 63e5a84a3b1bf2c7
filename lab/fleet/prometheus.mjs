/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A real Prometheus (Debian's /usr/bin/prometheus) scraping the fleet every second with the shipped recording and
// alert rules, on 127.0.0.1 with its own temporary storage. Targets come from a file (file_sd), rewritten as
// replicas come and go, as a service discovery would.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = '/usr/bin/prometheus';

export async function startPrometheus({ ruleFiles, track = () => {} }) {
  if (!existsSync(BIN)) throw new Error(`${BIN} not found: apt-get install -y prometheus`);
  const dir = mkdtempSync(join(tmpdir(), 'fleet-prometheus-'));
  const targetsFile = join(dir, 'targets.json');
  writeFileSync(targetsFile, '[]');
  const config = [
    'global: { scrape_interval: 1s, evaluation_interval: 1s, scrape_timeout: 900ms }',
    `rule_files: [${ruleFiles.map(f => JSON.stringify(f)).join(', ')}]`,
    'scrape_configs:',
    '  - job_name: fleet',
    `    file_sd_configs: [{ files: [${JSON.stringify(targetsFile)}], refresh_interval: 1s }]`,
  ].join('\n');
  writeFileSync(join(dir, 'prometheus.yml'), config);
  // It binds a port of its own choosing and logs it: no port picked for it that another process could take first.
  const child = spawn(
    BIN,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      '--web.listen-address=127.0.0.1:0',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  track(child);
  let logs = '';
  child.stderr.on('data', c => (logs = (logs + c).slice(-4000)));
  const exited = new Promise(resolve => child.once('exit', resolve));
  const deadline = Date.now() + 30_000;
  let url;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited:\n${logs}`);
    const address = /msg="Listening on" address=(127\.0\.0\.1:\d+)/.exec(logs)?.[1];
    if (address) url = `http://${address}`;
    try {
      if (url && (await fetch(`${url}/-/ready`)).ok) break;
    } catch {}
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`prometheus did not start:\n${logs}`);
    }
    await new Promise(r => setTimeout(r, 200));
  }
  const api = async path => {
    const body = await (await fetch(`${url}/api/v1/${path}`)).json();
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    /** targets: [{ address, job, instance }] */
    setTargets(targets) {
      const groups = targets.map(t => ({ targets: [t.address], labels: { job: t.job, instance: t.instance } }));
      writeFileSync(targetsFile, JSON.stringify(groups));
    },
    async query(expr, time) {
      const params = new URLSearchParams({ query: expr });
      if (time !== undefined) params.set('time', String(time));
      return (await api(`query?${params}`)).result;
    },
    async activeTargets() {
      return (await api('targets')).activeTargets;
    },
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
