#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Whose cost is whose in the short-sessions bench (issue 50), and which part of the server's work costs it.
//
// bench/short-sessions.mjs puts forkwatch on both sides of a pair at once and reads each side's CPU: a side's ratio
// could then hold the other side's doing (two processes share two cores, and their work interleaves). Here each side
// is chosen apart: a pair is `<server>/<client>`, each `bare` (the NodeSDK preload only) or `forkwatch` (plus
// `--import forkwatch/register`), and either side may load forkwatch from another build (`--build NAME=DIR`, a
// build/src such as an earlier commit's or one with part of its work cut out: an ablation; `--server-build` is the
// same option's older name). The same session as bench/short-sessions.mjs
// (bench/short-sessions/{server,client}.cjs): initialize, the standalone GET, one tools/call of 5 notifications,
// DELETE, close; `concurrency` at a time, `sessions` timed after `warmup`.
//
// Rounds rotate the order of the pairs; each pair's CPU per session is divided by the same round's bare/bare, and
// `bare-again` (bare/bare again) is the A/A control. Printed per pair: each side's median µs per session and its
// ratio to bare [interquartile range].
//
//   node bench/short-sessions-sides.mjs                                   the four pairs and the A/A, 6 rounds
//   node bench/short-sessions-sides.mjs --build cut=/tmp/cut/src         a server pair `cut/bare` too
//   node bench/short-sessions-sides.mjs --rounds 8 --sessions 1000 --warmup 300 --pairs forkwatch/bare,cut/bare
//   node bench/short-sessions-sides.mjs --pairs bare-again,forkwatch/bare --server-node-args --no-maglev
//
// Writes bench/results/short-sessions-sides.json (or --out). Run `node scripts/build.mjs` first.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exporterlessEnv, installForkwatch } from './outside-in/install.mjs';
import { summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const values = name => args.flatMap((a, i) => (a === name ? [args[i + 1]] : []));

const rounds = Number(value('--rounds', 6));
const sessions = Number(value('--sessions', 1000));
const warmup = Number(value('--warmup', 300));
const out = value('--out', join(here, 'results', 'short-sessions-sides.json'));

// Each forkwatch build a side may load, installed once as a package of its own (outside-in/install.mjs).
const scratch = join(root, '.tmp', `short-sessions-sides-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
const installs = new Map([['bare', undefined]]);
const installOf = (name, srcBuild) => {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  installForkwatch(root, dir, srcBuild);
  installs.set(name, dir);
};
installOf('forkwatch', undefined);
for (const spec of [...values('--build'), ...values('--server-build')]) {
  const [name, dir] = spec.split('=');
  if (!name || !dir || installs.has(name)) throw new Error(`--build NAME=DIR, a new name: ${spec}`);
  installOf(name, dir);
}
const builds = [...installs.keys()].filter(n => n !== 'bare' && n !== 'forkwatch');
const pairs = value(
  '--pairs',
  ['bare-again', 'forkwatch/bare', 'bare/forkwatch', 'forkwatch/forkwatch', ...builds.map(b => `${b}/bare`)].join(','),
)
  .split(',')
  .filter(Boolean);
for (const pair of pairs) {
  const [server, client] = pair === 'bare-again' ? ['bare', 'bare'] : pair.split('/');
  if (!installs.has(server) || !installs.has(client)) throw new Error(`unknown pair ${pair}`);
}
const sidesOf = pair => (pair === 'bare-again' || pair === 'bare' ? ['bare', 'bare'] : pair.split('/'));

const env = exporterlessEnv();
const nodeArgs = build => [
  '--expose-gc',
  '--require',
  join(here, 'outside-in', 'nodesdk.cjs'),
  ...(build === 'bare' ? [] : ['--import', 'forkwatch/register']),
];
// A bare process runs from the forkwatch install too (its cwd only): nothing of forkwatch is loaded without --import.
const cwdOf = build => installs.get(build) ?? installs.get('forkwatch');

// --server-node-args '...': V8 or node options for every server process, bare and forkwatch alike (`--no-maglev`:
// does forkwatch's cost depend on the tier its functions run in?).
const serverNodeArgs = (value('--server-node-args', '') ?? '').split(' ').filter(Boolean);

function run(file, build, extraEnv, onLine) {
  const extra = file === 'server.cjs' ? serverNodeArgs : [];
  const child = spawn(process.execPath, [...extra, ...nodeArgs(build), join(here, 'short-sessions', file)], {
    cwd: cwdOf(build),
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', c => {
    stdout += c;
    onLine?.(stdout);
  });
  child.stderr.on('data', c => (stderr += c));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

/** Whether a side's transports are patched: not bare, nor a build named `inert…` (forkwatch loaded, nothing patched). */
const patchedBuild = build => build !== 'bare' && !build.startsWith('inert');

/** One pair: the server's and the client's CPU per session (µs), each checked to be the build it should be. */
async function measure(pair) {
  const [serverBuild, clientBuild] = sidesOf(pair);
  let listening;
  const ready = new Promise((resolve, reject) => {
    listening = { resolve, reject };
  });
  const server = run('server.cjs', serverBuild, {}, text => {
    const m = /LISTENING (\d+) (\w+)/.exec(text);
    if (m) listening.resolve({ url: `http://127.0.0.1:${m[1]}/mcp`, patched: m[2] === 'patched' });
  });
  server.child.on('exit', code => listening.reject(new Error(`server exited ${code}: ${server.stderr()}`)));
  try {
    const { url, patched } = await ready;
    if (patched !== patchedBuild(serverBuild)) throw new Error(`${pair}: the server is not what it should be`);
    const bench = { url, sessions, warmup, count: 5, concurrency: 4 };
    const client = run('client.cjs', clientBuild, { BENCH: JSON.stringify(bench) });
    const code = await new Promise(resolve => client.child.on('exit', resolve));
    if (code !== 0) throw new Error(`${pair}: client exited ${code}: ${client.stderr()}`);
    const result = JSON.parse(client.stdout().trim().split('\n').pop());
    if (result.patched !== patchedBuild(clientBuild)) throw new Error(`${pair}: the client is not what it should be`);
    return {
      server: result.serverCpuUs / sessions,
      client: result.clientCpuUs / sessions,
      serverGc: result.serverGcUs / sessions,
      clientGc: result.clientGcUs / sessions,
      // The client's CPU by kind and by thread group (outside-in/threads.cjs): code, kernel, V8's helpers.
      clientUser: result.clientUserUs / sessions,
      clientSystem: result.clientSystemUs / sessions,
      clientThreads: Object.fromEntries(Object.entries(result.clientThreads ?? {}).map(([k, v]) => [k, v / sessions])),
    };
  } finally {
    server.child.kill('SIGTERM');
  }
}

const order = ['bare', ...pairs];
const perRound = [];
for (let round = 0; round < rounds; round++) {
  const rotated = order.map((_, i) => order[(i + round) % order.length]);
  const results = {};
  for (const pair of rotated) results[pair] = await measure(pair);
  perRound.push(results);
  const line = pairs
    .map(
      p =>
        `${p} ${(results[p].server / results.bare.server).toFixed(3)}/${(results[p].client / results.bare.client).toFixed(3)}`,
    )
    .join('  ');
  console.log(`round ${round + 1}/${rounds} (load ${os.loadavg()[0].toFixed(1)}): server/client ratios ${line}`);
}

const report = {};
console.log(
  `\n${rounds} rounds × ${sessions} sessions (after ${warmup}), Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model}`,
);
console.log(
  `bare/bare: server ${summarize(perRound.map(r => r.bare.server)).median.toFixed(0)} µs, client ${summarize(perRound.map(r => r.bare.client)).median.toFixed(0)} µs per session`,
);
console.log('pair (server/client)      server: µs/session, ratio to bare [IQR]      client: µs/session, ratio [IQR]');
for (const pair of pairs) {
  const side = which => {
    const us = summarize(perRound.map(r => r[pair][which]));
    const ratio = summarize(perRound.map(r => r[pair][which] / r.bare[which]));
    return { us: us.median, ratio };
  };
  const server = side('server');
  const client = side('client');
  const gc = which => summarize(perRound.map(r => r[pair][which])).median;
  report[pair] = { server, client, serverGcUs: gc('serverGc'), clientGcUs: gc('clientGc') };
  const show = s =>
    `${s.us.toFixed(0).padStart(5)} ${s.ratio.median.toFixed(3)} [${s.ratio.p25.toFixed(3)}–${s.ratio.p75.toFixed(3)}]`;
  console.log(`${pair.padEnd(24)}  ${show(server)}      ${show(client)}`);
}
// GC pauses on each side's main thread (bench/outside-in/gc-pauses.cjs): the part of a side's cost that is garbage;
// and the client's CPU by kind (user, system) and thread group (main, V8's helpers, the rest).
console.log('\nµs/session (median)      server GC   client GC    user  system    main    v8  other');
for (const pair of ['bare', ...pairs]) {
  const median = pick => summarize(perRound.map(r => pick(r[pair]) ?? 0)).median;
  const col = (pick, width) => median(pick).toFixed(0).padStart(width);
  console.log(
    `${pair.padEnd(24)} ${col(r => r.serverGc, 10)} ${col(r => r.clientGc, 11)} ${col(r => r.clientUser, 7)} ${col(r => r.clientSystem, 7)} ${col(r => r.clientThreads.main, 7)} ${col(r => r.clientThreads.v8, 5)} ${col(r => r.clientThreads.other, 6)}`,
  );
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, rounds, sessions, warmup, builds: Object.fromEntries([...values('--build'), ...values('--server-build')].map(s => s.split('='))), report, perRound }, null, 2)}\n`,
);
console.log(`wrote ${relative(process.cwd(), out)}`);
rmSync(scratch, { recursive: true, force: true });
