#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// What forkwatch adds to a process's heap once it has started, against the same process without it: the memory
// V8's major GCs mark again and again for as long as the process runs (docs/benchmark.md, "Heap alone does it").
//
// Two processes as the outside-in bench starts them (a bare NodeSDK preloaded; the instrumented one adds
// `--import forkwatch/register`): the bench's MCP server (outside-in/server.cjs), and a process that is only an MCP
// client (outside-in/sdk-client-only.cjs). Each runs `--runs` times per variant; after start-up two full GCs, then
// the heap in use (outside-in/heap-probe.cjs). Prints the medians and forkwatch's difference from bare.
//
//   node scripts/build.mjs && node bench/startup-heap.mjs [--runs 5] [--before DIR]
//     --before DIR: a third variant, another build of src (an earlier commit's build/src)
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exporterlessEnv, installForkwatch } from './outside-in/install.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const runs = Number(value('--runs', 5));
const beforeBuild = value('--before', undefined);

const scratch = join(root, '.tmp', `startup-heap-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
installForkwatch(root, scratch);
const beforeDir = join(scratch, 'before');
if (beforeBuild) installForkwatch(root, beforeDir, beforeBuild);

const variants = ['bare', 'forkwatch', ...(beforeBuild ? ['before'] : [])];
const workloads = {
  server: join(here, 'outside-in', 'server.cjs'),
  client: join(here, 'outside-in', 'sdk-client-only.cjs'),
};
const env = exporterlessEnv();

function measure(variant, script) {
  const argv = [
    '--expose-gc',
    '--require',
    join(here, 'outside-in', 'nodesdk.cjs'),
    ...(variant === 'bare' ? [] : ['--import', 'forkwatch/register']),
    '--require',
    join(here, 'outside-in', 'heap-probe.cjs'),
    script,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: variant === 'before' ? beforeDir : scratch, env });
    let stderr = '';
    child.stderr.on('data', c => (stderr += c));
    child.stdout.resume();
    child.on('exit', () => {
      const m = /HEAP (\{.*\})/.exec(stderr);
      if (m) resolve(JSON.parse(m[1]));
      else reject(new Error(`${variant} ${script}: no HEAP line\n${stderr}`));
    });
  });
}

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = bytes => (bytes / 1e6).toFixed(3);

console.log(
  `forkwatch startup heap: ${runs} processes per variant and workload, median heap in use after start-up and two full GCs`,
);
for (const [workload, script] of Object.entries(workloads)) {
  const results = Object.fromEntries(variants.map(variant => [variant, []]));
  for (let i = 0; i < runs; i++) {
    for (const variant of variants) results[variant].push(await measure(variant, script));
  }
  const bare = median(results.bare.map(r => r.heapUsed));
  const line = variants.map(variant => {
    const heap = median(results[variant].map(r => r.heapUsed));
    const extra =
      variant === 'bare' ? '' : ` (+${mb(heap - bare)} MB, ${median(results[variant].map(r => r.modules))} modules)`;
    return `${variant} ${mb(heap)} MB${extra}`;
  });
  console.log(`${workload.padEnd(6)}  ${line.join('   ')}`);
}
rmSync(scratch, { recursive: true, force: true });
