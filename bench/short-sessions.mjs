#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The short-sessions benchmark (issue 50): forkwatch's cost where most MCP traffic is, many short sessions.
//
// Real SDK 1.32.2 server and client processes (bench/short-sessions/server.cjs, client.cjs) on 127.0.0.1. A session:
// initialize, the standalone GET the SDK opens after it, one tools/call whose POST stream carries `count`
// notifications, DELETE, close; `concurrency` sessions at a time, `sessions` timed ones after `warmup` untimed ones.
// The client reads its own CPU (process.cpuUsage()) around the timed sessions and the server's from inside the
// server (a plain `GET /cpu`), so each side's figure is its own process's CPU per session.
//
// The fair baseline. Every process starts as an application that already runs OpenTelemetry does: a bare NodeSDK
// preloaded with `--require outside-in/nodesdk.cjs` (in-memory exporters, nothing sent), and the instrumented
// variant adds `--import forkwatch/register` on both sides, exactly as the README tells a user to. Both variants load
// the same MCP SDK modules before the window, and the window starts after the warm-up sessions and a full GC, so
// module loading, JIT warm-up and the OpenTelemetry SDK itself cost the same on both sides: the ratio is forkwatch's
// own cost per session (its patches, its wire observer, its spans, state and metrics through the app's SDK). A
// process's start-up is measured apart (bench/startup.mjs).
//
// Each round starts a fresh server and client process pair per variant, in an order rotated by round (A B C, B C A,
// C A B: each variant runs first, middle and last equally often): `bare` (NodeSDK both sides), `bare-again` (the
// same again: the A/A control, this run's noise floor) and `forkwatch` (NodeSDK + register both sides). Per round,
// each variant's CPU is divided by `bare`'s of the same round; the report gives the median ratio over rounds with
// its interquartile range, per side. The load average is printed beside the figures.
//
//   node bench/short-sessions.mjs                    10 rounds of 200 sessions (about 4 minutes on 2 shared cores)
//   node bench/short-sessions.mjs --quick            3 rounds of 60 sessions: a smoke test (npm run bench runs it)
//   node bench/short-sessions.mjs --rounds 6 --sessions 100 --count 5 --concurrency 4 --warmup 20
//   node bench/short-sessions.mjs --concurrent       each variant runs beside a bare pair of its own, started at the
//                                                     same moment, and is divided by that one: on a machine whose
//                                                     load moves from one second to the next, both feel the same
//   node bench/short-sessions.mjs --before DIR       a fourth variant, `before`: another build of src (an earlier
//                                                     commit's build/src) in the same rounds, for a before/after
//   node bench/short-sessions.mjs --idle             a variant `idle`: forkwatch loaded and patched as in `forkwatch`,
//                                                     its work switched off after the warm-up on both sides
//                                                     (outside-in/idle.cjs): what its presence costs, apart from
//                                                     what it does per session
//   node bench/short-sessions.mjs --node-args '…'     node options for every process (perf: bench/perf-attribution.mjs)
//   node bench/short-sessions.mjs --cpu-prof DIR     one extra profiled forkwatch pair, the client's and the server's
//     --cpu-prof-variants forkwatch,bare            profiles into DIR/<variant>/{client,server}; forkwatch's own
//                                                     self time per session is printed (bench/profile-top.mjs reads
//                                                     the files further)
//
// Writes bench/results/short-sessions.json (or --out). Run `node scripts/build.mjs` first: forkwatch is loaded from a
// private copy of build/ taken at the start (outside-in/install.mjs), so a rebuild during the run changes nothing.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exporterlessEnv, installForkwatch } from './outside-in/install.mjs';
import { summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const flag = name => args.includes(name);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = flag('--quick');
const config = {
  mode: quick ? 'quick' : 'full',
  rounds: Number(value('--rounds', quick ? 3 : 10)),
  sessions: Number(value('--sessions', quick ? 60 : 200)),
  warmup: Number(value('--warmup', 20)),
  count: Number(value('--count', 5)),
  concurrency: Number(value('--concurrency', 4)),
  variants: [
    'bare',
    'bare-again',
    'forkwatch',
    ...(flag('--before') ? ['before'] : []),
    ...(flag('--idle') ? ['idle'] : []),
  ],
  concurrent: flag('--concurrent'),
};
const instrumented = variant => variant === 'forkwatch' || variant === 'before' || variant === 'idle';
/** The bare run a variant's run of this round is divided by: the round's, or (--concurrent) the one beside it. */
const baselineOf = (round, variant) => round.baselines?.[variant] ?? round.results.bare;
const out = value('--out', join(here, 'results', 'short-sessions.json'));
const cpuProfDir = value('--cpu-prof', undefined) && resolvePath(value('--cpu-prof', undefined));
const profVariants = value('--cpu-prof-variants', 'forkwatch').split(',');
/** V8's sampling interval in the profiled pair (its default, 1 ms, is too coarse for a session of a few ms). */
const PROFILE_INTERVAL_US = 100;

// --- the scratch installs of forkwatch ---

const scratch = join(root, '.tmp', `short-sessions-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });
const installed = installForkwatch(root, scratch, value('--build', undefined));
const beforeDir = join(scratch, 'before');
const installedBefore = flag('--before') ? installForkwatch(root, beforeDir, value('--before', undefined)) : '';
const cwdOf = variant => (variant === 'before' ? beforeDir : scratch);
const installOf = variant => (variant === 'before' ? installedBefore : installed);
const env = exporterlessEnv();
/** --node-args: more node options for every process of every variant (bench/perf-attribution.mjs uses it). */
const extraNodeArgs = value('--node-args', '').split(' ').filter(Boolean);
const nodeArgs = variant => [
  ...extraNodeArgs,
  '--expose-gc',
  '--require',
  join(here, 'outside-in', 'nodesdk.cjs'),
  ...(instrumented(variant) ? ['--import', 'forkwatch/register'] : []),
];

function startServer(variant, extraArgs = []) {
  return new Promise((resolve, reject) => {
    const argv = [...extraArgs, ...nodeArgs(variant), join(here, 'short-sessions', 'server.cjs')];
    const child = spawn(process.execPath, argv, { cwd: cwdOf(variant), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', c => (stderr += c));
    child.stdout.on('data', c => {
      stdout += c;
      const m = /LISTENING (\d+) (\w+) (\S+)/.exec(stdout);
      if (m)
        resolve({
          child,
          url: `http://127.0.0.1:${m[1]}/mcp`,
          patched: m[2] === 'patched',
          loadedFrom: m[3] === '-' ? undefined : m[3],
          stderr: () => stderr,
        });
    });
    child.on('exit', code => reject(new Error(`server (${variant}) exited ${code} before listening:\n${stderr}`)));
  });
}

function runClient(variant, url, extraArgs = []) {
  return new Promise((resolve, reject) => {
    const argv = [...extraArgs, ...nodeArgs(variant), join(here, 'short-sessions', 'client.cjs')];
    const bench = {
      url,
      sessions: config.sessions,
      warmup: config.warmup,
      count: config.count,
      concurrency: config.concurrency,
      idle: variant === 'idle',
    };
    const child = spawn(process.execPath, argv, {
      cwd: cwdOf(variant),
      env: { ...env, BENCH: JSON.stringify(bench) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', c => (stdout += c));
    child.stderr.on('data', c => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('exit', code => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`client (${variant}) exited ${code}:\n${stderr}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop()));
      } catch {
        reject(new Error(`unreadable client output: ${stdout}\n${stderr}`));
      }
    });
  });
}

function stop(child) {
  return new Promise(resolve => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** One process pair of `variant`; checks that forkwatch is (or is not) in both and loaded from the snapshot. */
async function pair(variant, extra = {}) {
  const server = await startServer(variant, extra.server);
  try {
    const run = await runClient(variant, server.url, extra.client);
    for (const [side, patched, from] of [
      ['client', run.patched, run.loadedFrom],
      ['server', server.patched, server.loadedFrom],
    ]) {
      if (patched !== instrumented(variant))
        throw new Error(`${variant}: forkwatch is ${patched ? '' : 'not '}patched in the ${side}`);
      if (instrumented(variant) && !from?.startsWith(installOf(variant)))
        throw new Error(`${variant}: the ${side} loaded forkwatch from ${from}, not from the bench's snapshot`);
    }
    if (run.serverOpenAfter !== 0) throw new Error(`${variant}: ${run.serverOpenAfter} sessions left open`);
    return run;
  } catch (error) {
    error.message += `\nserver (${variant}) stderr:\n${server.stderr()}`;
    throw error;
  } finally {
    await stop(server.child);
  }
}

/**
 * forkwatch's own code in a profile: self time of the functions in its build, per function, in the timed window.
 * Counted in samples of the sampling interval, not in the profile's time deltas: a delta also holds the time the
 * thread waited for a CPU, which on a shared machine lands on whatever ran last.
 */
function forkwatchSelf(file, windowUs) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(prof.nodes.map(n => [n.id, n]));
  const [from, to] = windowUs ?? [prof.startTime, prof.endTime];
  const windowed = from >= prof.startTime && to <= prof.endTime;
  const byFunction = new Map();
  let busyUs = 0;
  let ownUs = 0;
  let at = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    at += prof.timeDeltas[i] ?? 0;
    if (windowed && (at < from || at > to)) continue;
    const us = PROFILE_INTERVAL_US;
    const frame = nodes.get(prof.samples[i]).callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') continue;
    busyUs += us;
    if (!frame.url.includes('/forkwatch/build/')) continue;
    ownUs += us;
    const key = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/forkwatch\/build\//, '')}:${frame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 15);
  return { windowed, busyUs, ownUs, top };
}

// --- measure ---

const startedAt = new Date();
const loadBefore = os.loadavg();
const rounds = [];
const profiles = {};
try {
  const k = config.variants.length;
  for (let r = 0; r < config.rounds; r++) {
    const order = config.variants.map((_, i) => config.variants[(i + r) % k]);
    const results = {};
    const baselines = {};
    if (config.concurrent) {
      // Each variant beside a bare pair of its own, started together: both feel the same load from the rest of the
      // machine for the same seconds, and each other's equally.
      for (const variant of order.filter(v => v !== 'bare')) {
        [baselines[variant], results[variant]] = await Promise.all([pair('bare'), pair(variant)]);
      }
      results.bare = baselines['bare-again'];
    } else {
      for (const variant of order) results[variant] = await pair(variant);
    }
    rounds.push({ order, results, ...(config.concurrent ? { baselines } : {}), loadAverage: os.loadavg()[0] });
    const ratio = (variant, side) =>
      results[variant][`${side}CpuUs`] / baselineOf(rounds.at(-1), variant)[`${side}CpuUs`];
    process.stderr.write(
      `round ${r + 1}/${config.rounds} (${order.join(' ')}, load ${os.loadavg()[0].toFixed(1)}): bare client ` +
        `${(results.bare.clientCpuUs / config.sessions / 1000).toFixed(2)} ms/session; forkwatch/bare client ` +
        `${ratio('forkwatch', 'client').toFixed(3)} server ${ratio('forkwatch', 'server').toFixed(3)}; A/A client ` +
        `${ratio('bare-again', 'client').toFixed(3)} server ${ratio('bare-again', 'server').toFixed(3)}\n`,
    );
  }
  if (cpuProfDir) {
    for (const variant of profVariants) {
      const dir = join(cpuProfDir, variant);
      rmSync(dir, { recursive: true, force: true });
      const prof = side => [
        '--cpu-prof',
        `--cpu-prof-dir=${join(dir, side)}`,
        '--cpu-prof-interval',
        String(PROFILE_INTERVAL_US),
      ];
      process.stderr.write(`profiled pair (${variant})…\n`);
      const run = await pair(variant, { client: prof('client'), server: prof('server') });
      profiles[variant] = {};
      for (const side of ['client', 'server']) {
        const file = readdirSync(join(dir, side)).find(f => f.endsWith('.cpuprofile'));
        // The client's window is its own clock's; the server's profile is read whole (start-up and warm-up included).
        const self = forkwatchSelf(join(dir, side, file), side === 'client' ? run.timedWindowUs : undefined);
        if (side === 'server') self.windowed = false;
        profiles[variant][side] = {
          file: join(dir, side, file),
          window: self.windowed ? 'the timed sessions' : 'the whole process',
          windowUs: self.windowed ? run.timedWindowUs : undefined,
          sessions: self.windowed ? config.sessions : config.sessions + config.warmup,
          busyUs: self.busyUs,
          forkwatchSelfUs: self.ownUs,
          top: self.top,
        };
      }
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// --- summarize ---

const SIDES = ['client', 'server'];
const perVariant = Object.fromEntries(
  config.variants.map(variant => [
    variant,
    Object.fromEntries(
      SIDES.map(side => [side, summarize(rounds.map(r => r.results[variant][`${side}CpuUs`] / config.sessions))]),
    ),
  ]),
);
const comparisons = config.variants
  .filter(v => v !== 'bare')
  .map(variant => ({
    variant,
    baseline: 'bare',
    ...Object.fromEntries(
      SIDES.map(side => [
        side,
        {
          ratio: summarize(
            rounds.map(r => r.results[variant][`${side}CpuUs`] / baselineOf(r, variant)[`${side}CpuUs`]),
          ),
          deltaUsPerSession: summarize(
            rounds.map(
              r => (r.results[variant][`${side}CpuUs`] - baselineOf(r, variant)[`${side}CpuUs`]) / config.sessions,
            ),
          ),
        },
      ]),
    ),
  }));
/** The client's CPU by kind and by thread group, per-round ratios to bare: where forkwatch's cost lands. */
const PARTS = {
  user: r => r.clientUserUs,
  system: r => r.clientSystemUs,
  main: r => r.clientThreads?.main,
  v8: r => r.clientThreads?.v8,
  other: r => r.clientThreads?.other,
};
/** The server's CPU by thread group: its main thread, V8's helpers (compilers, GC), the rest. */
const SERVER_PARTS = {
  main: r => r.serverThreads?.main,
  v8: r => r.serverThreads?.v8,
  other: r => r.serverThreads?.other,
};
const partsOf = parts =>
  Object.fromEntries(
    config.variants
      .filter(v => v !== 'bare')
      .map(variant => [
        variant,
        Object.fromEntries(
          Object.entries(parts).map(([part, of]) => [
            part,
            {
              ratio: summarize(rounds.map(r => of(r.results[variant]) / of(baselineOf(r, variant)))),
              bareUsPerSession: summarize(rounds.map(r => of(baselineOf(r, variant)) / config.sessions)).median,
              deltaUsPerSession: summarize(
                rounds.map(r => (of(r.results[variant]) - of(baselineOf(r, variant))) / config.sessions),
              ).median,
            },
          ]),
        ),
      ]),
  );
const clientParts = partsOf(PARTS);
const serverParts = partsOf(SERVER_PARTS);
const result = {
  command: `node bench/short-sessions.mjs${args.length ? ` ${args.join(' ')}` : ''}`,
  startedAt: startedAt.toISOString(),
  durationSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
  config,
  machine: {
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    loadAverageBefore: loadBefore,
    loadAverageAfter: os.loadavg(),
  },
  perVariant,
  comparisons,
  clientParts,
  serverParts,
  profiles,
  rounds,
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);

// --- print ---

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const cell = s => `${f(s.median)} [${f(s.p25)}–${f(s.p75)}]`;
const loads = rounds.map(r => r.loadAverage);
console.log(
  `\nforkwatch on many short sessions: ${config.rounds} rounds × ${config.sessions} sessions (${config.count} ` +
    `notifications each, ${config.concurrency} at a time, after ${config.warmup} warm-up). Node ${process.version}, ` +
    `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${loadBefore[0].toFixed(2)} before, ` +
    `${f(Math.min(...loads), 1)}–${f(Math.max(...loads), 1)} during, ${os.loadavg()[0].toFixed(2)} after.\n`,
);
console.log('CPU per session, medians: ');
for (const [variant, v] of Object.entries(perVariant))
  console.log(
    `  ${variant.padEnd(12)} client ${f(v.client.median / 1000, 2)} ms   server ${f(v.server.median / 1000, 2)} ms`,
  );
console.log("\nper-round ratios to the same round's bare: median [interquartile range]");
for (const c of comparisons)
  console.log(
    `  ${`${c.variant} / bare`.padEnd(22)} client ${cell(c.client.ratio)} (${f(c.client.deltaUsPerSession.median, 0)} µs/session)` +
      `   server ${cell(c.server.ratio)} (${f(c.server.deltaUsPerSession.median, 0)} µs/session)`,
  );
for (const [side, sideParts] of [
  ['client', clientParts],
  ['server', serverParts],
]) {
  console.log(`\nthe ${side}'s CPU by part (ratio median [IQR], difference per session):`);
  for (const [variant, parts] of Object.entries(sideParts))
    console.log(
      `  ${variant.padEnd(12)} ` +
        Object.entries(parts)
          .map(
            ([part, p]) => `${part} ${cell(p.ratio)} (${f(p.deltaUsPerSession, 0)} of ${f(p.bareUsPerSession, 0)} µs)`,
          )
          .join('  '),
    );
}
for (const [variant, sides] of Object.entries(profiles)) {
  for (const [side, p] of Object.entries(sides)) {
    console.log(
      `\nprofile, ${variant} ${side} (${p.window}, ${p.sessions} sessions): busy ${f(p.busyUs / p.sessions, 0)} µs/session, ` +
        `forkwatch's own code ${f(p.forkwatchSelfUs / p.sessions, 0)} µs/session ` +
        `(${relative(process.cwd(), p.file)})`,
    );
    for (const [key, us] of p.top.slice(0, 10)) console.log(`  ${f(us / p.sessions, 1).padStart(7)} µs  ${key}`);
  }
}
console.log(`\nwrote ${relative(root, out)} (${result.durationSeconds} s)`);
