#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The short-sessions workload (bench/short-sessions.mjs) counted in instructions, not CPU time: what forkwatch costs
// per session where CPU time cannot tell (issue 50).
//
// On a shared 2-core machine a batch of the same 100 sessions takes from 2.2 to 4.3 ms of CPU per session from one
// second to the next, and two builds a few hundredths apart cannot be told from each other by CPU time (the A/A
// control of short-sessions.mjs spreads over ±7 % per round). Instructions retired do not depend on the machine's
// load: the measured process runs under valgrind's callgrind with V8 in `--single-threaded` mode (no concurrent
// compilation or marking racing the main thread). Outside V8's heap two runs of one build agreed within a few tenths
// of a percent at first; in issue 50's fifth pass bare moved by 2 % between two runs while `before` repeated within
// 0.1 %: read differences under about 1 % as noise (docs/benchmark.md).
//
// Per side (the client process, the server process) and variant, two runs of real SDK 1.32.2 processes as in
// short-sessions.mjs, the measured one under callgrind and the other native: `--small` and `--small + --sessions`
// timed sessions after the same warm-up. Their difference divided by `--sessions` is the instructions per session,
// start-up and warm-up cancelled. Variants: `bare` (a NodeSDK preload), `bare-again` (the same again: the A/A
// control), `forkwatch` (NodeSDK + `--import forkwatch/register`, both processes), and with `--before DIR` another
// build of src. The instructions are split into V8's heap (the garbage collector and the allocator's slow paths, by
// function name) and everything else: in single-threaded mode a major GC runs inside or outside the window by where the
// heap's limit falls, so the rest, the work the sessions themselves do, is the steadier figure.
//
//   node bench/short-sessions-instructions.mjs                 100 sessions per side (about 10 minutes)
//   node bench/short-sessions-instructions.mjs --sessions 200 --small 20 --side client --before DIR
//   node bench/short-sessions-instructions.mjs --side server --keep-listings DIR   each process's listing by function
//   node bench/short-sessions-instructions.mjs --side server --simulate cache,branch   callgrind's cache and branch
//        simulators too: first-level and last-level misses (I1mr, D1mr, …) and mispredicted branches (Bcm, Bim) per
//        session, for a cost that is not more instructions (issue 50's eighth pass)
//
// Needs valgrind (Debian: apt-get install valgrind). Writes bench/results/short-sessions-instructions.json (or --out).
// Run `node scripts/build.mjs` first.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exporterlessEnv, installForkwatch } from './outside-in/install.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const config = {
  sessions: Number(value('--sessions', 100)),
  small: Number(value('--small', 20)),
  warmup: Number(value('--warmup', 20)),
  count: 5,
  concurrency: 4,
  sides: value('--side', 'client,server').split(','),
  variants: ['bare', 'bare-again', 'forkwatch', ...(args.includes('--before') ? ['before'] : [])],
};
const out = value('--out', join(here, 'results', 'short-sessions-instructions.json'));
const keepListings = value('--keep-listings', undefined);
/** `--simulate cache,branch`: callgrind's simulators, whose events are counted beside the instructions. */
const simulate = (value('--simulate', '') ?? '').split(',').filter(Boolean);
for (const sim of simulate) if (sim !== 'cache' && sim !== 'branch') throw new Error(`--simulate cache|branch: ${sim}`);
if (keepListings !== undefined) mkdirSync(keepListings, { recursive: true });
/** V8's heap (its garbage collector, the allocator's slow paths), by the names of its functions in callgrind's listing. */
const GC_FUNCTION =
  /Mark|Scaveng|Sweep|Evacuat|Compact|WriteBarrier|RememberedSet|Slot|GlobalHandles|RecordWrite|SizeFromMap|LiveObject|Migrat|heap::base|Heap|BodyDescriptor|NeedsReset|UsedInstanceSize|FreeList|Worklist|Allocat|PagedSpace|Page|Reloc|Ephemeron|Weak|Flush|memcpy|memmove/;

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  process.stderr.write('short-sessions-instructions: needs valgrind (Debian: apt-get install valgrind)\n');
  process.exit(2);
}

const scratch = join(root, '.tmp', `short-sessions-instructions-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
const installs = {};
for (const variant of config.variants) {
  const dir = join(scratch, variant);
  installForkwatch(root, dir, variant === 'before' ? value('--before', undefined) : undefined);
  installs[variant] = dir;
}
const instrumented = variant => variant === 'forkwatch' || variant === 'before';
const nodeArgs = variant => [
  '--expose-gc',
  '--require',
  join(here, 'outside-in', 'nodesdk.cjs'),
  ...(instrumented(variant) ? ['--import', 'forkwatch/register'] : []),
];

/** One server and client pair of `variant` with `sessions` timed sessions, `side` under callgrind: its listing. */
async function measure(variant, side, sessions, tag) {
  const file = join(scratch, `${tag}.callgrind`);
  const callgrind = [
    'valgrind',
    '--tool=callgrind',
    '--smc-check=all-non-file',
    ...simulate.map(sim => `--${sim}-sim=yes`),
    `--callgrind-out-file=${file}`,
    process.execPath,
    '--single-threaded',
  ];
  const command = (measured, script) => [
    ...(measured ? callgrind : [process.execPath]),
    ...nodeArgs(variant),
    join(here, 'short-sessions', script),
  ];
  const env = exporterlessEnv();
  const [serverCmd, ...serverArgs] = command(side === 'server', 'server.cjs');
  const server = spawn(serverCmd, serverArgs, { cwd: installs[variant], env, stdio: ['ignore', 'pipe', 'pipe'] });
  let serverErr = '';
  server.stderr.on('data', c => (serverErr += c));
  const serverExit = new Promise(resolve => server.on('exit', resolve));
  try {
    const url = await new Promise((resolve, reject) => {
      let text = '';
      server.stdout.on('data', c => {
        text += c;
        const m = /LISTENING (\d+) (\w+)/.exec(text);
        if (!m) return;
        if ((m[2] === 'patched') !== instrumented(variant)) reject(new Error(`server (${variant}) is ${m[2]}`));
        else resolve(`http://127.0.0.1:${m[1]}/mcp`);
      });
      server.on('exit', code => reject(new Error(`server (${variant}) exited ${code}:\n${serverErr}`)));
    });
    const bench = { url, sessions, warmup: config.warmup, count: config.count, concurrency: config.concurrency };
    const [clientCmd, ...clientArgs] = command(side === 'client', 'client.cjs');
    const client = spawn(clientCmd, clientArgs, {
      cwd: installs[variant],
      env: { ...env, BENCH: JSON.stringify(bench) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let clientErr = '';
    client.stderr.on('data', c => (clientErr += c));
    let clientOut = '';
    client.stdout.on('data', c => (clientOut += c));
    const code = await new Promise(resolve => client.on('exit', resolve));
    if (code !== 0) throw new Error(`client (${variant}) exited ${code}:\n${clientErr.slice(-2000)}`);
    // Both sides are what the variant says (a side that silently ran bare would measure nothing).
    const result = JSON.parse(clientOut.trim().split('\n').pop());
    if (result.patched !== instrumented(variant)) throw new Error(`client (${variant}): patched is ${result.patched}`);
  } finally {
    server.kill('SIGTERM');
    await serverExit;
  }
  return readListing(file);
}

/** Instructions in all, and in V8's heap, from callgrind's files of one process. */
function readListing(file) {
  const files = readdirSync(dirname(file))
    .filter(f => join(dirname(file), f).startsWith(file))
    .map(f => join(dirname(file), f));
  let total = 0;
  let gc = 0;
  /** Every event of the listing (Ir first; the simulators' misses and mispredictions with --simulate), in all. */
  const events = {};
  for (const f of files) {
    const listing = execFileSync('callgrind_annotate', ['--threshold=100', f], { maxBuffer: 1 << 28 }).toString();
    const names = /^Events shown:\s+(.*)$/m.exec(listing)?.[1].trim().split(/\s+/) ?? [];
    const totals = listing.split('\n').find(l => l.includes('PROGRAM TOTALS')) ?? '';
    const counts = totals
      .trim()
      .split(/\s+/)
      .filter(t => /^[\d,]+$/.test(t))
      .map(t => Number(t.replaceAll(',', '')));
    names.forEach((name, i) => {
      events[name] = (events[name] ?? 0) + (counts[i] ?? 0);
    });
    // --keep-listings DIR: each process's listing by function, for diffing two variants function by function.
    if (keepListings !== undefined) {
      writeFileSync(join(keepListings, `${basename(f)}.txt`), listing);
      // And who calls what: `callgrind_annotate --tree=caller`, for a function whose count moved.
      const callers = execFileSync('callgrind_annotate', ['--threshold=99', '--tree=caller', f], {
        maxBuffer: 1 << 28,
      });
      writeFileSync(join(keepListings, `${basename(f)}.callers.txt`), callers);
    }
    for (const line of listing.split('\n')) {
      const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
      if (!m) continue;
      const n = Number(m[1].replaceAll(',', ''));
      if (m[2].includes('PROGRAM TOTALS')) total += n;
      else if (GC_FUNCTION.test(m[2])) gc += n;
    }
    rmSync(f);
  }
  return { total, gc, events };
}

/** Runs `jobs` two at a time (instructions do not depend on the load, but the runs take minutes each). */
async function runAll(jobs) {
  const results = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  };
  await Promise.all([worker(), worker()]);
  return results;
}

const started = Date.now();
mkdirSync(scratch, { recursive: true });
const jobs = [];
const keys = [];
for (const side of config.sides) {
  for (const variant of config.variants) {
    for (const sessions of [config.small, config.small + config.sessions]) {
      keys.push({ side, variant, sessions });
      jobs.push(() => measure(variant, side, sessions, `${side}-${variant}-${sessions}`));
    }
  }
}
const listings = await runAll(jobs);
const perSession = {};
for (const side of config.sides) {
  perSession[side] = {};
  for (const variant of config.variants) {
    const at = sessions =>
      listings[keys.findIndex(k => k.side === side && k.variant === variant && k.sessions === sessions)];
    const small = at(config.small);
    const large = at(config.small + config.sessions);
    const total = (large.total - small.total) / config.sessions;
    const gc = (large.gc - small.gc) / config.sessions;
    const simulated = Object.fromEntries(
      Object.keys(large.events)
        .filter(e => e !== 'Ir')
        .map(e => [e, (large.events[e] - (small.events[e] ?? 0)) / config.sessions]),
    );
    perSession[side][variant] = { total, gc, rest: total - gc, simulated };
  }
}

const f = (n, d = 3) => n.toFixed(d);
const M = n => `${f(n / 1e6, 2)} M`;
console.log(
  `forkwatch on many short sessions, in instructions: ${config.sessions} sessions (${config.small} + ${config.sessions} against ${config.small}, after ${config.warmup} warm-up), the measured process under callgrind with --single-threaded. Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}.`,
);
for (const side of config.sides) {
  const rows = perSession[side];
  const base = rows.bare;
  console.log(`\n${side}: instructions per session (all; V8's heap; the rest) and the ratio to bare`);
  for (const variant of config.variants) {
    const r = rows[variant];
    console.log(
      `  ${variant.padEnd(11)} ${M(r.total).padStart(9)} ${M(r.gc).padStart(9)} ${M(r.rest).padStart(9)}   ` +
        `all ${f(r.total / base.total)}  the rest ${f(r.rest / base.rest)}`,
    );
  }
  if (simulate.length === 0) continue;
  console.log(`${side}: the simulators' events per session (${simulate.join(', ')}) and the ratio to bare`);
  for (const variant of config.variants) {
    const sim = rows[variant].simulated;
    console.log(
      `  ${variant.padEnd(11)} ` +
        Object.entries(sim)
          .map(([e, n]) => `${e} ${Math.round(n)} (${f(n / (base.simulated[e] || Number.NaN))})`)
          .join('  '),
    );
  }
}
const result = {
  command: `node bench/short-sessions-instructions.mjs ${args.join(' ')}`.trim(),
  startedAt: new Date(started).toISOString(),
  durationSeconds: Math.round((Date.now() - started) / 1000),
  config,
  machine: { node: process.version, cpus: os.cpus().length, model: os.cpus()[0]?.model },
  perSession,
  runs: keys.map((k, i) => ({ ...k, ...listings[i] })),
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwrote ${out} (${result.durationSeconds} s)`);
rmSync(scratch, { recursive: true, force: true });
