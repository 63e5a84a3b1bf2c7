/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// forkwatch's two listeners under hostile load (issue 53), figures printed:
//
//   register's /metrics, in a real SDK 1.32.2 server started with `--require forkwatch/register` and a canary
//   argument: the host's RSS before, at its peak and after `--scrapers` concurrent scrapers for `--seconds`; how long
//   `--slow` slowloris connections live; whether the canary appears in /metrics.
//   `forkwatch exporter`: its RSS before, after the fuzz of the issue (10,000 target parameters, 1 MB request lines)
//   and after the same scrapers; how long 20 abandoned scrapes of a target that never answers keep their slots, and
//   the status of the healthy scrape after them.
//
//   node scripts/build.mjs && node bench/listeners.mjs [--seconds 30] [--scrapers 200] [--slow 300]
//        [--before DIR]   also run a build of older sources (DIR is its build/src) in the same run, for before/after
//        [--only metrics|exporter]
//
// The `A/A` line of each part is the same measurement of an idle host over the same time: its RSS drift is the
// noise floor the "after" figure is read against.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installForkwatch } from './outside-in/install.mjs';
import {
  abandonedScrapes,
  get,
  oversizedRequests,
  rssOf,
  scrapers,
  sleep,
  slowConnections,
} from './listeners/attacks.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const seconds = Number(value('--seconds', 30));
const concurrency = Number(value('--scrapers', 200));
const slow = Number(value('--slow', 300));
const before = value('--before', undefined);
const only = value('--only', undefined);
const CANARY = `canary-${process.pid}-${Date.now().toString(36)}`;
const MB = n => (n / 1048576).toFixed(1);

/** A child process whose stderr is kept; resolves `waitFor(pattern)` with the first match. */
function child(command, argv, options) {
  const proc = spawn(command, argv, { ...options, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', chunk => (err += chunk));
  return {
    proc,
    stderr: () => err,
    async waitFor(pattern, timeoutMs = 30_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const m = pattern.exec(err);
        if (m) return m;
        if (Date.now() > end || proc.exitCode !== null) throw new Error(`no ${pattern} in:\n${err}`);
        await sleep(50);
      }
    },
    stop: () => proc.kill('SIGKILL'),
  };
}

/** RSS samples of `pid` while `work` runs: the peak. */
async function peakDuring(pid, work) {
  let peak = rssOf(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 250);
  const result = await work();
  clearInterval(timer);
  return { result, peak: Math.max(peak, rssOf(pid)) };
}

async function settledRss(pid, ms) {
  await sleep(ms);
  return rssOf(pid);
}

async function metricsEndpoint(label, srcBuild) {
  const dir = join(root, '.tmp', `bench-listeners-${process.pid}-${label}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  installForkwatch(root, dir, srcBuild);
  for (const file of ['http-server-app.cjs', 'default-port-to-os.cjs'])
    cpSync(join(root, 'test/register/fixtures', file), join(dir, file));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  const app = child(
    process.execPath,
    [
      '--require',
      './default-port-to-os.cjs',
      '--require',
      'forkwatch/register',
      'http-server-app.cjs',
      `--api-token=${CANARY}`,
    ],
    { cwd: dir, env },
  );
  try {
    const port = Number(JSON.parse((await app.waitFor(/FIXTURE LISTEN (.*)\n/))[1]).port);
    await app.waitFor(/FIXTURE SERVER (\d+)/);
    const url = `http://127.0.0.1:${port}/metrics`;
    for (let i = 0; i < 50; i++) await get(url);
    const text = await (await fetch(url)).text();
    const idleStart = await settledRss(app.proc.pid, 3000);
    const idleEnd = await settledRss(app.proc.pid, 5000);
    const { result: statuses, peak } = await peakDuring(app.proc.pid, () => scrapers(url, concurrency, seconds * 1000));
    const after10 = await settledRss(app.proc.pid, 10_000);
    const after20 = await settledRss(app.proc.pid, 10_000);
    const loris = slowConnections(port, slow, { everyMs: 500 });
    const silent = slowConnections(port, Math.min(slow, 50), { silent: true });
    await Promise.race([Promise.all([loris.closed, silent.closed]), sleep(35_000)]);
    const lorisOpen = loris.open;
    const lorisMax = Math.max(0, ...loris.closedAfterMs);
    loris.stop();
    silent.stop();
    const healthy = await get(url);
    console.log(
      `${label.padEnd(9)} /metrics  canary in /metrics: ${text.includes(CANARY)}  ` +
        `RSS idle ${MB(idleStart)} → ${MB(idleEnd)} MB (A/A drift ${MB(idleEnd - idleStart)})  ` +
        `${concurrency} scrapers × ${seconds} s: ${JSON.stringify(statuses)}, peak ${MB(peak)} MB, ` +
        `+10 s ${MB(after10)} MB, +20 s ${MB(after20)} MB (after − before ${MB(after20 - idleEnd)} MB)  ` +
        `${slow} slowloris: ${lorisOpen === 0 ? `all closed, the last after ${lorisMax} ms` : `${lorisOpen} still open after 35 s`}; ` +
        `silent: ${silent.open} open; next scrape ${healthy.status}`,
    );
  } finally {
    app.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function exporterListener(label, cliMain) {
  const dir = join(root, '.tmp', `bench-exporter-${process.pid}-${label}`);
  mkdirSync(dir, { recursive: true });
  // A target that accepts and never answers, and a real SDK server for the healthy scrape.
  const hang = createServer(() => undefined);
  await new Promise(resolve => hang.listen(0, '127.0.0.1', resolve));
  const mcp = child(process.execPath, [join(root, 'test/register/fixtures/http-server-app.cjs')], {
    cwd: root,
    env: { PATH: process.env.PATH },
  });
  const mcpPort = Number((await mcp.waitFor(/FIXTURE SERVER (\d+)/))[1]);
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ modules: { default: { timeoutMs: 2000, resumes: 2, deadlineMs: 20_000 } } }));
  const exporter = child(process.execPath, [cliMain, 'exporter', '--config', config, '--listen', '127.0.0.1:0'], {
    env: { PATH: process.env.PATH },
  });
  try {
    const port = Number((await exporter.waitFor(/listening on http:\/\/127\.0\.0\.1:(\d+)/))[1]);
    const base = `http://127.0.0.1:${port}`;
    const probe = target => `${base}/probe?target=${encodeURIComponent(target)}`;
    const healthyUrl = probe(`http://127.0.0.1:${mcpPort}/mcp`);
    const hangUrl = probe(`http://127.0.0.1:${hang.address().port}/mcp`);
    await get(healthyUrl);
    const idle = await settledRss(exporter.proc.pid, 3000);
    const { result: fuzz, peak: fuzzPeak } = await peakDuring(exporter.proc.pid, () =>
      oversizedRequests(port, '/probe', 50),
    );
    const afterFuzz = await settledRss(exporter.proc.pid, 5000);
    const { result: statuses, peak } = await peakDuring(exporter.proc.pid, () =>
      scrapers(`${base}/metrics`, concurrency, seconds * 1000),
    );
    const afterLoad = await settledRss(exporter.proc.pid, 10_000);
    // A second burst: whether the first one's growth is a bound (V8's young generation at its cap) or a leak.
    const { peak: secondPeak } = await peakDuring(exporter.proc.pid, () =>
      scrapers(`${base}/metrics`, concurrency, seconds * 1000),
    );
    const afterSecond = await settledRss(exporter.proc.pid, 10_000);
    await abandonedScrapes(hangUrl, 20, 300);
    const left = Date.now();
    let freedMs;
    for (;;) {
      const own = await (await fetch(`${base}/metrics`)).text();
      const inFlight = Number(/^forkwatch_exporter_probes_in_flight (\d+)/m.exec(own)[1]);
      const queued = Number(/^forkwatch_exporter_probes_queued (\d+)/m.exec(own)[1]);
      if (inFlight + queued === 0) {
        freedMs = Date.now() - left;
        break;
      }
      if (Date.now() - left > 20_000) break;
      await sleep(50);
    }
    const next = await get(healthyUrl);
    console.log(
      `${label.padEnd(9)} exporter  RSS idle ${MB(idle)} MB; fuzz ${JSON.stringify(fuzz)} peak ${MB(fuzzPeak)}, after ${MB(afterFuzz)} MB; ` +
        `${concurrency} scrapers × ${seconds} s of /metrics: ${JSON.stringify(statuses)}, peak ${MB(peak)}, +10 s ${MB(afterLoad)} MB ` +
        `(after − before ${MB(afterLoad - idle)} MB); a second burst: peak ${MB(secondPeak)}, +10 s ${MB(afterSecond)} MB; 20 abandoned scrapes: slots free after ${freedMs === undefined ? '> 20000' : freedMs} ms, next healthy scrape ${next.status}`,
    );
  } finally {
    exporter.stop();
    mcp.stop();
    hang.closeAllConnections();
    hang.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`node ${process.version}, ${concurrency} scrapers for ${seconds} s, ${slow} slowloris connections`);
const variants = [['now', undefined, join(root, 'build/src/cli/main.js')]];
if (before) variants.unshift(['before', before, join(before, 'cli/main.js')]);
for (const [label, srcBuild, cliMain] of variants) {
  if (only !== 'exporter') await metricsEndpoint(label, srcBuild);
  if (only !== 'metrics') await exporterListener(label, cliMain);
}
