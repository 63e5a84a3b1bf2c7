#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Hot-path cost of forkwatch's fetch observer on @ai-sdk/mcp's HTTP transport (test/sdk-versions/ai-sdk-mcp).
//
// A real SDK server (ai-sdk-server.cjs, its own process) sends notifications on the session's standalone GET stream;
// each variant runs in its own client process (ai-sdk-client.mjs) in alternating rounds, every round running every
// variant once in a rotated order. Per round, each variant is compared with the uninstrumented client of the same
// round; the report gives the medians of those ratios with their spread, and the A/A control (`bare-again`) shows
// what no difference looks like in this run. `providers` is forkwatch with the observer off (tracer and meter
// providers, the instrumentation registered): forkwatch / providers is the fetch observer's own cost.
//
//   node scripts/build.mjs && node bench/ai-sdk.mjs            full run
//   node bench/ai-sdk.mjs --quick                              a few rounds
//   node bench/ai-sdk.mjs --rounds 8 --count 10000 --out /tmp/ai-sdk.json
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = args.includes('--quick');
const config = {
  rounds: Number(value('--rounds', quick ? 3 : 10)),
  count: Number(value('--count', quick ? 3000 : 10000)),
  warmup: Number(value('--warmup', quick ? 2000 : 10000)),
  bytes: Number(value('--bytes', 64)),
  variants: ['bare', 'bare-again', 'providers', 'forkwatch'],
};
const out = value('--out', join(here, 'results', 'ai-sdk.json'));
const appFolder = join(root, 'test/sdk-versions/ai-sdk-mcp');
if (!existsSync(join(appFolder, 'node_modules/@ai-sdk/mcp'))) {
  console.error('npm ci --prefix test/sdk-versions/ai-sdk-mcp first');
  process.exit(2);
}
// A private copy of the build: other work may rebuild build/ while this runs.
const snapshot = join(root, '.tmp', `bench-ai-sdk-${process.pid}`);
rmSync(snapshot, { recursive: true, force: true });
mkdirSync(snapshot, { recursive: true });
cpSync(join(root, 'build', 'src'), join(snapshot, 'src'), { recursive: true });
const forkwatchEntry = join(snapshot, 'src', 'index.js');

const server = spawn(process.execPath, [join(here, 'ai-sdk-server.cjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  let text = '';
  server.stdout.on('data', chunk => {
    text += chunk;
    const m = /LISTENING (\d+)/.exec(text);
    if (m) resolve(Number(m[1]));
  });
  server.once('exit', code => reject(new Error(`bench server exited ${code}`)));
});

function runClient(variant) {
  const bench = { ...config, variant, url: `http://127.0.0.1:${port}/mcp`, forkwatchEntry, appFolder };
  const child = spawn(process.execPath, [join(here, 'ai-sdk-client.mjs')], {
    env: { ...process.env, BENCH: JSON.stringify(bench) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', chunk => (text += chunk));
    child.once('exit', code =>
      code === 0 ? resolve(JSON.parse(text.trim().split('\n').pop())) : reject(new Error(`${variant} exited ${code}`)),
    );
  });
}

const rounds = [];
try {
  for (let r = 0; r < config.rounds; r++) {
    const order = config.variants.map((_, i) => config.variants[(i + r) % config.variants.length]);
    const round = {};
    for (const variant of order) round[variant] = await runClient(variant);
    rounds.push(round);
    const show = v => `${v} ${round[v].ms.toFixed(0)} ms (CPU ${round[v].cpuMs.toFixed(0)} ms)`;
    process.stderr.write(`round ${r + 1}/${config.rounds}: ${order.map(show).join(', ')}\n`);
  }
} finally {
  server.kill('SIGTERM');
  rmSync(snapshot, { recursive: true, force: true });
}

// CPU time of the client process is the figure to rely on when the machine is shared; wall time is also reported.
const perFrame = key =>
  Object.fromEntries(config.variants.map(v => [v, summarize(rounds.map(r => (r[v][key] * 1000) / config.count))]));
const ratios = (key, base = 'bare') =>
  Object.fromEntries(
    config.variants.filter(v => v !== base).map(v => [v, summarize(rounds.map(r => r[v][key] / r[base][key]))]),
  );
const result = {
  config,
  machine: { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg() },
  cpuUsPerFrame: perFrame('cpuMs'),
  wallUsPerFrame: perFrame('ms'),
  cpuRatioToBare: ratios('cpuMs'),
  wallRatioToBare: ratios('ms'),
  // The observer alone: forkwatch against the same providers and instrumentation with observeFetch off.
  observerCpuRatio: summarize(rounds.map(r => r.forkwatch.cpuMs / r.providers.cpuMs)),
  observerWallRatio: summarize(rounds.map(r => r.forkwatch.ms / r.providers.ms)),
  rounds,
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
const fmt = s => `${s.median.toFixed(3)} [${s.p25.toFixed(3)}–${s.p75.toFixed(3)}]`;
console.log(
  `@ai-sdk/mcp standalone GET stream, ${config.count} notifications of ${config.bytes} bytes, ${config.rounds} rounds`,
);
console.log(`load average ${result.machine.loadavg.map(l => l.toFixed(1)).join(' ')}`);
for (const v of config.variants) {
  console.log(
    `  ${v.padEnd(11)} CPU ${result.cpuUsPerFrame[v].median.toFixed(1)} µs/frame, wall ${result.wallUsPerFrame[v].median.toFixed(1)} µs/frame`,
  );
}
for (const v of Object.keys(result.cpuRatioToBare)) {
  console.log(`  ${v.padEnd(11)} / bare: CPU ${fmt(result.cpuRatioToBare[v])}, wall ${fmt(result.wallRatioToBare[v])}`);
}
console.log(
  `  forkwatch   / providers (the observer alone): CPU ${fmt(result.observerCpuRatio)}, wall ${fmt(result.observerWallRatio)}`,
);
console.log(`wrote ${out}`);
