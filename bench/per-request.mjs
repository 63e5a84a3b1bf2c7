#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The hot-path cost of the protocol 2026-07-28 patches: tool calls through the real 2.x server and client on
// loopback (per-request-child.cjs), bare NodeSDK against NodeSDK + forkwatch, each run in its own process, in
// alternating rounds with a rotated order. Per round: the ratio of CPU per call (forkwatch / bare NodeSDK) and the
// difference (forkwatch's cost per call, server and client halves together).
//
//   node scripts/build.mjs && node bench/per-request.mjs [--rounds 6] [--count 1500] [--warmup 300]
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(value('--rounds', 6));
const count = Number(value('--count', 1500));
const warmup = Number(value('--warmup', 300));

// A private copy of the build, as run.mjs does: other work may rebuild build/ while this runs.
const snapshot = join(root, '.tmp', `bench-per-request-${process.pid}`);
rmSync(snapshot, { recursive: true, force: true });
mkdirSync(snapshot, { recursive: true });
cpSync(join(root, 'build', 'src'), join(snapshot, 'src'), { recursive: true });
const forkwatchEntry = join(snapshot, 'src', 'index.js');

function run(variant, nodeArgs = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...nodeArgs, join(here, 'per-request-child.cjs'), variant, forkwatchEntry, count, warmup],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', c => (out += c));
    child.on('exit', code => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${variant} exited ${code}`))));
  });
}

const variants = ['sdk', 'sdk+forkwatch'];
const perRound = [];
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  const results = {};
  for (const v of order) results[v] = (await run(v)).cpuUsPerCall;
  perRound.push(results);
  process.stderr.write(
    `round ${round + 1}/${rounds}: ${variants.map(v => `${v} ${results[v].toFixed(1)} µs/call`).join(', ')}\n`,
  );
}

// The sampling profiler's view of one NodeSDK + forkwatch process: CPU in forkwatch's own code and in the metrics SDK
// it calls, per call (less noisy than the ratio, which the SDK's own milliseconds per call dominate; it misses the GC
// of forkwatch's allocations).
const profileDir = join(snapshot, 'profile');
await run('sdk+forkwatch', ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
const profile = JSON.parse(readFileSync(join(profileDir, readdirSync(profileDir)[0]), 'utf8'));
const selfUs = new Map();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
let forkwatchUs = 0;
let metricsSdkUs = 0;
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  if (node.callFrame.url.includes(snapshot)) forkwatchUs += us;
  else if (/@opentelemetry[\\/](sdk-metrics|core)[\\/]/.test(node.callFrame.url)) metricsSdkUs += us;
}
const profiledCalls = count + warmup;
rmSync(snapshot, { recursive: true, force: true });

const ratio = summarize(perRound.map(r => r['sdk+forkwatch'] / r.sdk));
const cost = summarize(perRound.map(r => r['sdk+forkwatch'] - r.sdk));
const base = summarize(perRound.map(r => r.sdk));
const f = (s, d = 3) => `${s.median.toFixed(d)} (p25 ${s.p25.toFixed(d)}, p75 ${s.p75.toFixed(d)}, n ${s.n})`;
process.stdout.write(
  `${JSON.stringify({
    bench: 'per-request',
    count,
    rounds,
    ratio,
    costUsPerCall: cost,
    baseUsPerCall: base,
    profiledUsPerCall: { forkwatch: forkwatchUs / profiledCalls, metricsSdk: metricsSdkUs / profiledCalls },
  })}\n`,
);
process.stderr.write(
  `\nprotocol 2026-07-28 tool calls (2.x client + server on loopback, one publish per call), CPU per call:\n` +
    `  bare NodeSDK:            ${f(base, 1)} µs\n` +
    `  NodeSDK + forkwatch / bare NodeSDK: ratio ${f(ratio)}\n` +
    `  forkwatch's cost:        ${f(cost, 1)} µs per call\n` +
    `  profiler: forkwatch's own code ${(forkwatchUs / profiledCalls).toFixed(1)} µs per call, the metrics SDK it calls ` +
    `${(metricsSdkUs / profiledCalls).toFixed(1)} µs (one NodeSDK + forkwatch process)\n`,
);
