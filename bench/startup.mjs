#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// What `--require forkwatch/register` adds to a process that starts and ends at once (issue 50): a CLI, an `npx`
// shim, a health check pays it on every run. `node -e 0` against `node --require forkwatch/register -e 0` (and
// `--import`), each started `--runs` times in interleaved rounds (every variant once per round, in a rotated order),
// with `node -e 0` a second time as the A/A control. Prints the median wall time (spawn to exit, as a shell sees
// it) and CPU time (all threads, read as the process exits: startup/cpu-at-exit.cjs, preloaded in every variant) of
// each, and the differences from bare node. The load average is printed beside them: on a shared machine other work
// stretches wall time, never CPU time.
//
//   node scripts/build.mjs && node bench/startup.mjs [--runs 20] [--before DIR]
//     --before DIR: another build of src (an earlier commit's build/src) as a variant of its own, for a before/after
//
// forkwatch runs from a scratch install of the build (outside-in/install.mjs), as an application's dependency, with
// the environment of a user who set nothing: register starts its own SDK and Prometheus endpoint when it gets to.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installForkwatch } from './outside-in/install.mjs';
import { summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const runs = Number(value('--runs', 20));
const beforeBuild = value('--before', undefined);

const scratch = join(root, '.tmp', `startup-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
installForkwatch(root, scratch);
const beforeDir = join(scratch, 'before');
if (beforeBuild) installForkwatch(root, beforeDir, beforeBuild);

const cpuAtExit = ['--require', join(here, 'startup', 'cpu-at-exit.cjs')];
const VARIANTS = {
  node: { args: [] },
  'node again': { args: [] },
  '--require register': { args: ['--require', 'forkwatch/register'] },
  '--import register': { args: ['--import', 'forkwatch/register'] },
  ...(beforeBuild
    ? { '--require register (before)': { args: ['--require', 'forkwatch/register'], cwd: beforeDir } }
    : {}),
};
// The user's environment, less what would point register elsewhere.
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !k.startsWith('OTEL_') && !k.startsWith('FORKWATCH_') && k !== 'NODE_OPTIONS',
  ),
);

function once({ args: extra, cwd = scratch }) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, [...cpuAtExit, ...extra, '-e', '0'], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', c => (stderr += c));
    child.stdout.resume();
    child.on('exit', code => {
      const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
      const cpu = /STARTUP-CPU (\d+)/.exec(stderr);
      if (code !== 0 || !cpu) return reject(new Error(`${extra.join(' ')} -e 0 exited ${code}:\n${stderr}`));
      const other = stderr.replace(/STARTUP-CPU \d+\n/, '');
      if (other !== '') return reject(new Error(`${extra.join(' ')} -e 0 wrote to stderr:\n${other}`));
      resolve({ wallMs, cpuMs: Number(cpu[1]) / 1000 });
    });
  });
}

const names = Object.keys(VARIANTS);
const samples = Object.fromEntries(names.map(n => [n, []]));
const loadBefore = os.loadavg();
for (let r = 0; r < runs; r++) {
  for (let i = 0; i < names.length; i++) {
    const name = names[(i + r) % names.length];
    samples[name].push(await once(VARIANTS[name]));
  }
}
rmSync(scratch, { recursive: true, force: true });

const med = (name, key) => summarize(samples[name].map(s => s[key])).median;
const f = x => x.toFixed(0).padStart(5);
console.log(
  `start-up of \`-e 0\`: median of ${runs} per variant, interleaved. Node ${process.version}, ${os.cpus().length} × ` +
    `${os.cpus()[0]?.model ?? 'cpu'}, load average ${loadBefore[0].toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after.\n`,
);
console.log(`${'variant'.padEnd(30)}  wall ms  (− node)   CPU ms  (− node)`);
for (const name of names) {
  const wall = med(name, 'wallMs');
  const cpu = med(name, 'cpuMs');
  console.log(
    `${name.padEnd(30)}  ${f(wall)}    ${f(wall - med('node', 'wallMs'))}    ${f(cpu)}    ${f(cpu - med('node', 'cpuMs'))}`,
  );
}
