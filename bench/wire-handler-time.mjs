#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// How long the client's wire observer takes per call where it runs: in a short-sessions client (issue 50's workload,
// bench/short-sessions/client.cjs against a bare server), with its undici channel handlers timed from inside
// (bench/ablations.mjs `timed-wire`). Prints, per handler and request method, the calls and the median and 90th
// percentile in µs after the first `--skip` calls (the warm-up's), and the median times the calls per session (a sum
// would hold whatever GC pause fell inside a call).
//
//   node scripts/build.mjs && node bench/wire-handler-time.mjs [--sessions 200] [--warmup 20] [--skip 300]
//
// A process's CPU time cannot resolve a few µs per session; a handler's own time can. Compare with the same check run
// in a loop to see what running between the host's code costs it (docs/benchmark.md, tenth pass).
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeAblations } from './ablations.mjs';
import { exporterlessEnv, installForkwatch } from './outside-in/install.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const sessions = Number(value('--sessions', 200));
const warmup = Number(value('--warmup', 20));
const skip = Number(value('--skip', 300));

const scratch = join(root, '.tmp', `wire-handler-time-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch, { recursive: true });
const { 'timed-wire': timedSrc } = makeAblations(join(scratch, 'builds'), { names: ['timed-wire'] });
const dir = join(scratch, 'app');
mkdirSync(dir, { recursive: true });
installForkwatch(root, dir, timedSrc);

const env = exporterlessEnv();
const nodeArgs = forkwatch => [
  '--expose-gc',
  '--require',
  join(here, 'outside-in', 'nodesdk.cjs'),
  ...(forkwatch ? ['--import', 'forkwatch/register'] : []),
];

const server = spawn(process.execPath, [...nodeArgs(false), join(here, 'short-sessions', 'server.cjs')], {
  cwd: dir,
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  let serverOut = '';
  const url = await new Promise((resolve, reject) => {
    server.on('exit', code => reject(new Error(`server exited ${code}`)));
    server.stdout.on('data', chunk => {
      serverOut += chunk;
      const m = /LISTENING (\d+)/.exec(serverOut);
      if (m) resolve(`http://127.0.0.1:${m[1]}/mcp`);
    });
  });
  const bench = { url, sessions, warmup, count: 5, concurrency: 4 };
  const client = spawn(process.execPath, [...nodeArgs(true), join(here, 'short-sessions', 'client.cjs')], {
    cwd: dir,
    env: { ...env, BENCH: JSON.stringify(bench) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  client.stdout.on('data', c => (out += c));
  client.stderr.on('data', c => (err += c));
  const code = await new Promise(resolve => client.on('exit', resolve));
  if (code !== 0) throw new Error(`the timed client exited ${code}: ${err.slice(-2000)}`);
  const result = JSON.parse(out.trim().split('\n').pop() ?? '{}');
  const line = err.split('\n').find(l => l.startsWith('WIRETIME '));
  if (!result.patched || !line) throw new Error(`the timed client was not patched or timed: ${err.slice(-2000)}`);

  const calls = JSON.parse(line.slice('WIRETIME '.length)).slice(skip);
  const byKind = new Map();
  for (const call of calls) {
    const [what, method, ns] = call.split('|');
    const kind = `${what} ${method}`;
    if (!byKind.has(kind)) byKind.set(kind, []);
    byKind.get(kind).push(Number(ns) / 1000);
  }
  const timedSessions = (sessions + warmup) * (calls.length / (calls.length + skip));
  console.log(
    `wire observer handlers in a short-sessions client (${sessions} sessions after ${warmup}; first ${skip} calls left out)`,
  );
  console.log('handler, request method      calls   median µs   p90 µs   median × calls per session, µs');
  let total = 0;
  for (const [kind, us] of [...byKind].sort()) {
    us.sort((a, b) => a - b);
    const at = q => us[Math.min(us.length - 1, Math.floor(us.length * q))];
    console.log(
      `${kind.padEnd(28)} ${String(us.length).padStart(5)} ${at(0.5).toFixed(2).padStart(11)} ${at(0.9).toFixed(2).padStart(8)} ${((at(0.5) * us.length) / timedSessions).toFixed(1).padStart(16)}`,
    );
    total += (at(0.5) * us.length) / timedSessions;
  }
  console.log(`all handlers, median × calls per session: ${total.toFixed(1)} µs`);
  console.log(`client CPU per session (all of it): ${(result.clientCpuUs / sessions).toFixed(0)} µs`);
} finally {
  server.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}
