#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The server side's cost: stored events through the real SDK web-standard transport, bare NodeSDK against NodeSDK +
// forkwatch (its server patch, recording store and delivery ledger), each run in its own process, in alternating
// rounds with a rotated order. Per round: the ratio of CPU per event (forkwatch / bare NodeSDK) and the difference
// (forkwatch's cost per stored event). Then the ledger's memory per session with pending events.
//
// Then the sampling profiler's attribution in one NodeSDK + forkwatch process.
//
//   node scripts/build.mjs && node bench/server-delivery.mjs [--rounds 6] [--count 2000] [--sessions 10]
//   [--shared-store]   one event store object for every session (forkwatch then records who stored each event)
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
const count = Number(value('--count', 2000));
const sessions = Number(value('--sessions', 10));
const warmup = Number(value('--warmup', 3));
if (args.includes('--shared-store')) process.env.FORKWATCH_BENCH_SHARED_STORE = '1';

// A private copy of the build, as run.mjs does: other work may rebuild build/ while this runs.
const snapshot = join(root, '.tmp', `bench-server-${process.pid}`);
rmSync(snapshot, { recursive: true, force: true });
mkdirSync(snapshot, { recursive: true });
cpSync(join(root, 'build', 'src'), join(snapshot, 'src'), { recursive: true });
const forkwatchEntry = join(snapshot, 'src', 'index.js');

function run(variant, perProcess = sessions, nodeArgs = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...nodeArgs, join(here, 'server-delivery-child.cjs'), variant, forkwatchEntry, count, perProcess, warmup],
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
  for (const v of order) results[v] = (await run(v)).cpuUsPerEvent;
  perRound.push(results);
  process.stderr.write(
    `round ${round + 1}/${rounds}: ${variants.map(v => `${v} ${results[v].toFixed(2)} µs/event`).join(', ')}\n`,
  );
}

// The sampling profiler's view of one NodeSDK + forkwatch process: CPU spent in forkwatch's own code and in the
// metrics SDK it calls, per stored event. Less noisy than the ratios (GC pauses land anywhere), but it misses what
// forkwatch makes others do (the GC of its allocations, one promise reaction per event).
const profileDir = join(snapshot, 'profile');
const profiled = await run('sdk+forkwatch', sessions, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
const profile = JSON.parse(readFileSync(join(profileDir, readdirSync(profileDir)[0]), 'utf8'));
const selfUs = new Map();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
let forkwatchUs = 0;
let metricsSdkUs = 0;
for (const node of profile.nodes) {
  const url = node.callFrame.url;
  const us = selfUs.get(node.id) ?? 0;
  if (url.includes(snapshot)) forkwatchUs += us;
  else if (/@opentelemetry[\\/](sdk-metrics|core)[\\/]/.test(url)) metricsSdkUs += us;
}
const profiledEvents = (sessions + warmup) * count * 2;
const ratio = summarize(perRound.map(r => r['sdk+forkwatch'] / r.sdk));
const cost = summarize(perRound.map(r => r['sdk+forkwatch'] - r.sdk));
const base = summarize(perRound.map(r => r.sdk));

// Memory: the ledger's own bytes per session with pending events (two streams each), from the built core.
const { DeliveryLedger } = await import(join(snapshot, 'src', 'core', 'delivery-ledger.js'));
const memory = await new Promise((resolve, reject) => {
  const code = `
    const { DeliveryLedger, probeDeliveryLedger } = require(${JSON.stringify(join(snapshot, 'src', 'core', 'delivery-ledger.js'))});
    const n = 10000, keys = Array.from({ length: n }, () => ({}));
    const ledger = new DeliveryLedger({ maxSessions: n }, () => {});
    global.gc(); const before = process.memoryUsage().heapUsed;
    for (const k of keys) { ledger.stored(k, '_GET_stream', { open: false, replayable: true, standalone: true }, 1); ledger.stored(k, 'req-1', { open: false, replayable: true, standalone: false }, 1); ledger.activity(k, 2); }
    global.gc(); const after = process.memoryUsage().heapUsed;
    process.stdout.write(JSON.stringify({ sessions: probeDeliveryLedger(ledger).sessionsWithPending, bytesPerSession: (after - before) / n }));`;
  const child = spawn(process.execPath, ['--expose-gc', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', c => (out += c));
  child.on('exit', c => (c === 0 ? resolve(JSON.parse(out)) : reject(new Error(`memory probe exited ${c}`))));
});
void DeliveryLedger;
rmSync(snapshot, { recursive: true, force: true });

const fmt = s => `${s.median.toFixed(3)} [${s.p25.toFixed(3)} … ${s.p75.toFixed(3)}]`;
console.log(
  `server side, ${rounds} rounds × ${sessions} sessions × ${2 * count} stored events per process (median [IQR])`,
);
console.log(`  bare NodeSDK:                 ${fmt(base)} µs CPU per stored event`);
console.log(`  forkwatch cost per event:     ${fmt(cost)} µs (target <= 1)`);
console.log(`  overhead ratio vs NodeSDK:    ${fmt(ratio)} (target <= 1.02)`);
console.log(`  sampling profiler, one NodeSDK + forkwatch process (${profiled.events} measured events + warm-up):`);
console.log(
  `    forkwatch's own code ${(forkwatchUs / profiledEvents).toFixed(2)} µs per stored event, the metrics SDK ${(metricsSdkUs / profiledEvents).toFixed(2)} µs (target <= 1 together)`,
);
console.log(
  `  ledger memory: ${Math.round(memory.bytesPerSession)} B per session with pending events (${memory.sessions} sessions, 2 streams each)`,
);
