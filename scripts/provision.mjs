/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// What the tests need beyond `npm ci`, provisioned before they run (scripts/test.mjs calls it; `node
// scripts/provision.mjs` runs it alone):
// - Debian's prometheus and prometheus-alertmanager (prometheus, promtool, prometheus-alertmanager, amtool), jsonnet
//   for the pack's mixin, and haproxy, nginx-light and redis-server for the fleet lab's real parts, installed with apt-get when missing and the
//   user is root; otherwise a clear message and a failure, never a skip. Packages that ship a service (nginx,
//   redis-server, haproxy, prometheus) would start it on its default port: a policy-rc.d that answers 101 ("action
//   forbidden", honoured by invoke-rc.d and deb-systemd-invoke) is in place for the install, so none starts.
// - The app folders in test/sdk-versions/ that pin older MCP SDKs, and test/runtimes/ (the Node.js binaries of every
//   line forkwatch claims, scripts/runtimes.mjs): `npm ci` in each whose install is missing or older than its
//   lockfile; a failed install fails here, loudly, instead of failing the tests later. Each runtime must then answer
//   `--version` with its line.
// The three run at once (apt-get beside the npm installs, the folders' installs a few at a time, sharing npm's cache
// with --prefer-offline: the folders pin many of the same packages), each install's output printed when it ends,
// with its time: on a fresh machine they are minutes of network waits one after another otherwise.
// It starts nothing that keeps running and stops nothing: the tests start their own servers on ports from the OS.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RUNTIMES, RUNTIMES_DIR, runtimeBinary } from './runtimes.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The Debian binaries the tests run (test/support/prometheus.ts BIN), by the package that installs them. */
export const DEBIAN_BINARIES = {
  prometheus: ['/usr/bin/prometheus', '/usr/bin/promtool'],
  'prometheus-alertmanager': ['/usr/bin/prometheus-alertmanager', '/usr/bin/amtool'],
  // The pack's jsonnet mixin is compiled by the tests (test/alerts/mixin.test.ts).
  jsonnet: ['/usr/bin/jsonnet'],
  // The fleet lab's real parts (lab/fleet/real-parts.mjs BINARIES), run with deploy/'s configs.
  haproxy: ['/usr/sbin/haproxy'],
  'nginx-light': ['/usr/sbin/nginx'],
  'redis-server': ['/usr/bin/redis-server'],
};

/** Forbids every service start during the install (see the header); removed afterwards unless it was there. */
export const POLICY_RC_D =
  '#!/bin/sh\n# forkwatch provision: packages installed for the tests start no service\nexit 101\n';

async function withServicesForbidden(policyRcPath, fn) {
  if (existsSync(policyRcPath)) return await fn(); // the machine's own policy stays as it is
  writeFileSync(policyRcPath, POLICY_RC_D, { mode: 0o755 });
  try {
    return await fn();
  } finally {
    rmSync(policyRcPath, { force: true });
  }
}

const log = line => console.error(`provision: ${line}`);

/** Runs a command to its end without blocking the others; its output is kept and printed at once when it ends. */
export function runAsync(cmd, args, { label = `${cmd} ${args[0] ?? ''}`, ...opts } = {}) {
  return new Promise(resolve => {
    const started = performance.now();
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', chunk => output.push(chunk));
    child.stderr.on('data', chunk => output.push(chunk));
    child.once('error', error => resolve({ status: null, signal: null, error }));
    child.once('close', (status, signal) => {
      const text = Buffer.concat(output).toString().trimEnd();
      if (text) process.stderr.write(`${text}\n`);
      log(`${label}: exit ${status ?? signal} after ${((performance.now() - started) / 1000).toFixed(1)} s`);
      resolve({ status, signal });
    });
  });
}

/** Runs `tasks` (functions returning promises), at most `limit` at a time; resolves with their results in order. */
async function pooled(tasks, limit) {
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** npm installs at once: npm is mostly waiting on the network and the disk, two cores keep three busy. */
const NPM_CONCURRENCY = 3;

/** Installs the Debian packages whose binaries are missing. Returns an error message, or undefined when all is there. */
export async function provisionDebianPackages({
  run = runAsync,
  binaries = DEBIAN_BINARIES,
  isRoot = process.getuid?.() === 0,
  hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0,
  policyRcPath = '/usr/sbin/policy-rc.d',
} = {}) {
  const missing = Object.entries(binaries).filter(([, bins]) => bins.some(bin => !existsSync(bin)));
  if (missing.length === 0) return undefined;
  const packages = missing.map(([pkg]) => pkg);
  const bins = missing.flatMap(([, b]) => b.filter(bin => !existsSync(bin)));
  const command = `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  if (!isRoot || !hasApt) {
    return (
      `${bins.join(', ')} missing; the rule, alert, dashboard and fleet tests need them. ` +
      (hasApt
        ? `Run as root: ${command}`
        : `Install Debian's packages ${packages.join(', ')} (apt-get is not available here)`)
    );
  }
  log(`${bins.join(', ')} missing: ${command}`);
  // --no-install-recommends leaves out prometheus-node-exporter; no service is stopped or started by this script.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = await run('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  if (update.status !== 0)
    return `apt-get update failed (exit ${update.status ?? update.signal}); cannot install ${packages.join(', ')}`;
  const install = await withServicesForbidden(policyRcPath, () =>
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { stdio: 'inherit', env }),
  );
  if (install.status !== 0) return `${command} failed (exit ${install.status ?? install.signal})`;
  const still = bins.filter(bin => !existsSync(bin));
  if (still.length > 0) return `${command} succeeded but ${still.join(', ')} is still missing`;
  return undefined;
}

/**
 * `npm ci` in each folder (its own package.json and lockfile) whose install is missing or older than its lockfile,
 * NPM_CONCURRENCY at a time.
 */
async function npmCiWhereStale(folders, run) {
  const stale = folders.filter(app => {
    const lock = join(app, 'package-lock.json');
    if (!existsSync(lock)) return false;
    // npm writes node_modules/.package-lock.json at the end of every install: its age tells a finished, current one.
    const installed = join(app, 'node_modules/.package-lock.json');
    return !(existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs);
  });
  const results = await pooled(
    stale.map(app => async () => {
      const where = relative(root, app);
      log(`npm ci in ${where}`);
      const res = await run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline', '--prefix', app], {
        cwd: root,
        stdio: 'inherit',
        label: `npm ci in ${where}`,
      });
      return res.status === 0
        ? undefined
        : `npm ci in ${where} failed (exit ${res.status ?? res.signal ?? res.error}); the tests that need it cannot run`;
    }),
    NPM_CONCURRENCY,
  );
  return results.filter(error => error !== undefined);
}

/** `npm ci` in every test/sdk-versions/ folder whose install is missing or older than its lockfile. */
export async function provisionVersionFolders({ run = runAsync, versionsDir = join(root, 'test/sdk-versions') } = {}) {
  const names = existsSync(versionsDir) ? readdirSync(versionsDir).sort() : [];
  return npmCiWhereStale(
    names.map(name => join(versionsDir, name)),
    run,
  );
}

/** `npm ci` in test/runtimes/ when stale, then each runtime of scripts/runtimes.mjs must be of its line. */
export async function provisionRuntimes({ run = runAsync, askVersion = run === runAsync ? spawnSync : run } = {}) {
  const errors = await npmCiWhereStale([join(root, RUNTIMES_DIR)], run);
  if (errors.length > 0) return errors;
  for (const runtime of RUNTIMES) {
    const bin = runtimeBinary(root, runtime);
    const res = askVersion(bin, ['--version'], { encoding: 'utf8' });
    const version = String(res.stdout ?? '').trim();
    if (res.status !== 0 || !version.startsWith(`v${runtime.line}.`))
      errors.push(`${relative(root, bin)} is not Node.js ${runtime.line} (${version || res.error || res.status})`);
  }
  return errors;
}

/** Everything, at once; resolves with the list of errors (empty when the tests have what they need). */
export async function provision() {
  const started = performance.now();
  const [debian, versions, runtimes] = await Promise.all([
    provisionDebianPackages(),
    provisionVersionFolders(),
    provisionRuntimes(),
  ]);
  log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return [...(debian ? [debian] : []), ...versions, ...runtimes];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const errors = await provision();
  for (const e of errors) log(`FAILED: ${e}`);
  process.exit(errors.length > 0 ? 1 : 0);
}
