#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The outside-in benchmark: forkwatch's cost as a user measures it, from outside the processes.
//
// Real SDK 1.32.2 server and client processes (bench/outside-in/server.cjs, client.cjs) talk over loopback. Every
// process starts with a bare NodeSDK (`--require outside-in/nodesdk.cjs`); the instrumented one adds
// `--import forkwatch/register`, exactly as the README tells a user to. Two workloads:
//
// - server: the instrumented side is the server. It sends 2,000-notification bursts on the request stream and on
//   the standalone GET stream, with the SDK's InMemoryEventStore, to a plain client. The server reads its own CPU
//   (process.cpuUsage(), and per thread group from /proc: outside-in/threads.cjs) as each burst starts and ends.
// - client: the instrumented side is the client, reading the same bursts from a plain server. The client reads its
//   own CPU as it calls the tool and once the burst's last notification arrived.
//
// Each round starts a fresh process pair for each of three variants, in a rotated order: `bare` (NodeSDK),
// `bare-again` (the same again: the A/A control, this run's noise floor) and `forkwatch` (NodeSDK + register).
// A process warms up with untimed bursts (4 pairs, plus 0–4 more by round: see phaseOffset), then times `timed`
// bursts of each stream kind. Its figure is its CPU from the start of the first timed burst to the end of the last,
// per burst pair (see figures). Per round, each variant is divided by `bare` of the same round; the report gives the
// median ratio over rounds with its interquartile range, in all and per thread group (main, V8's helpers).
//
//   npm run bench:outside-in                 full run (12 rounds; about 9 minutes on 2 shared cores)
//   npm run bench:outside-in -- --quick      3 rounds, fewer bursts: a smoke test, about 2 minutes
//   node bench/outside-in.mjs --phase 0       every process times the same bursts (the records before 2026-12-02, night)
//   node bench/outside-in.mjs --workloads server --rounds 6 --out /tmp/x.json
//   node bench/outside-in.mjs --cpu-prof DIR  one extra profiled process per workload (forkwatch), into DIR
//     --cpu-prof-variants bare,forkwatch      and a bare one beside it, into DIR/<workload>/<variant>
//     --cpu-prof-interval 100                 V8's sampling interval in µs (read with bench/profile-top.mjs --skip-ms)
//   node bench/outside-in.mjs --before DIR    a fourth variant, `before`: another build of src (an earlier commit's
//                                             build/src) in the same rounds, for a before/after under one noise
//
// Writes bench/results/outside-in.json (or --out). Run `node scripts/build.mjs` first: forkwatch is loaded from a
// private copy of build/ taken at the start, installed as node_modules/forkwatch of a scratch directory that the
// processes run in, so `--import forkwatch/register` resolves the way it does in an application.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exporterlessEnv, installForkwatch } from './outside-in/install.mjs';
import { summarize } from './stats.mjs';
import { cpuSpent } from './outside-in/threads.cjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const flag = name => args.includes(name);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = flag('--quick');
const config = {
  mode: quick ? 'quick' : 'full',
  rounds: Number(value('--rounds', quick ? 3 : 12)),
  count: Number(value('--count', 2000)),
  warmup: Number(value('--warmup', quick ? 2 : 4)),
  timed: Number(value('--timed', quick ? 3 : 6)),
  workloads: value('--workloads', 'server,client').split(','),
  // Extra warm-up pairs, 0 to `phase`, by round (the same for every variant of a round): see phaseOffset.
  phase: Number(value('--phase', quick ? 0 : 4)),
  variants: ['bare', 'bare-again', 'forkwatch', ...(args.includes('--before') ? ['before'] : [])],
};
/** The variants that run forkwatch, each from its own scratch install. */
const instrumented = variant => variant === 'forkwatch' || variant === 'before';
const out = value('--out', join(here, 'results', 'outside-in.json'));
// Absolute: the profiled processes run in the scratch directory.
const cpuProfDir = value('--cpu-prof', undefined) && resolvePath(value('--cpu-prof', undefined));
const profVariants = value('--cpu-prof-variants', 'forkwatch').split(',');
// V8 samples every 1 ms by default: too coarse for a few seconds of bursts.
const cpuProfIntervalUs = Number(value('--cpu-prof-interval', 100));
// Instruction counts under valgrind's callgrind. Meant to be immune to the machine's load; on this machine they moved
// by a fifth between runs of one build (V8's background threads, GC, burst timing: docs/benchmark.md). Each
// variant's measured process runs twice, with `cgTimed` timed burst pairs and with none (both after `cgWarmup`
// warm-up pairs): the difference is the instructions of those bursts, start-up and warm-up cancelled.
const callgrind = flag('--callgrind');
const cg = {
  warmup: Number(value('--cg-warmup', 3)),
  timed: Number(value('--cg-timed', 3)),
  variants: value('--cg-variants', 'bare,forkwatch').split(','),
};
if (callgrind) config.rounds = Number(value('--rounds', 0));

// --- the scratch install of forkwatch ---

const scratch = join(root, '.tmp', `outside-in-${process.pid}`);
rmSync(scratch, { recursive: true, force: true });

const install = (dir, srcBuild) => installForkwatch(root, dir, srcBuild);
// --build DIR: measure another build of src (an earlier commit's build/src, for a before/after).
const installed = install(scratch, value('--build', undefined));
const beforeDir = join(scratch, 'before');
const installedBefore = config.variants.includes('before') ? install(beforeDir, value('--before', undefined)) : '';
const cwdOf = variant => (variant === 'before' ? beforeDir : scratch);
const installOf = variant => (variant === 'before' ? installedBefore : installed);

const env = exporterlessEnv();
const nodeArgs = variant => [
  '--require',
  join(here, 'outside-in', 'nodesdk.cjs'),
  ...(instrumented(variant) ? ['--import', 'forkwatch/register'] : []),
];

/** `node` with its arguments, or under a launcher (valgrind) given as its argv prefix. */
const command = (launcher, argv) =>
  launcher ? [launcher[0], [...launcher.slice(1), process.execPath, ...argv]] : [process.execPath, argv];

function startServer(variant, extraArgs = [], launcher = undefined) {
  return new Promise((resolve, reject) => {
    const [file, argv] = command(launcher, [
      ...extraArgs,
      ...nodeArgs(variant),
      join(here, 'outside-in', 'server.cjs'),
    ]);
    const child = spawn(file, argv, { cwd: cwdOf(variant), env, stdio: ['ignore', 'pipe', 'pipe'] });
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

function runClient(variant, url, extraArgs = [], launcher = undefined, bursts = {}) {
  return new Promise((resolve, reject) => {
    const [file, argv] = command(launcher, [
      ...extraArgs,
      ...nodeArgs(variant),
      join(here, 'outside-in', 'client.cjs'),
    ]);
    const { warmup = config.warmup, timed = config.timed } = bursts;
    const child = spawn(file, argv, {
      cwd: cwdOf(variant),
      env: { ...env, BENCH: JSON.stringify({ url, count: config.count, warmup, timed }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', c => (stdout += c));
    child.stderr.on('data', c => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 1_800_000);
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

/** One process pair: the instrumented side runs `variant`, the other side is bare NodeSDK. */
async function pair(workload, variant, extra = {}) {
  const server = await startServer(workload === 'server' ? variant : 'bare', extra.server ?? [], extra.serverLauncher);
  try {
    const run = await runClient(
      workload === 'client' ? variant : 'bare',
      server.url,
      extra.client ?? [],
      extra.clientLauncher,
      extra.bursts,
    );
    const patched = workload === 'server' ? server.patched : run.patched;
    if (patched !== instrumented(variant)) {
      throw new Error(`${workload} ${variant}: forkwatch is ${patched ? '' : 'not '}patched in the measured process`);
    }
    const from = workload === 'server' ? server.loadedFrom : run.loadedFrom;
    if (instrumented(variant) && !from?.startsWith(installOf(variant))) {
      throw new Error(`${workload}: forkwatch was loaded from ${from}, not from the bench's snapshot`);
    }
    return run;
  } catch (error) {
    error.message += `\nserver (${workload === 'server' ? variant : 'bare'}) exit code ${server.child.exitCode}, stderr:\n${server.stderr()}`;
    throw error;
  } finally {
    await stop(server.child);
  }
}

const THREAD_GROUPS = ['main', 'v8', 'other'];
/**
 * Extra warm-up burst pairs in round `r`: 0, 1, ... `phase`, then again. The SDK's InMemoryEventStore keeps every
 * event, so the heap grows all run long and V8's major GCs come at points set by its size: a process that holds a
 * little more (forkwatch's 57 modules, 1.3 MB) meets them a burst or so earlier or later. A dozen timed bursts hold
 * one major GC more or less than the neighbouring process's, by ±10 % in either direction and the same way in every
 * round, whatever the code costs (docs/benchmark.md, 2026-12-02, night). Starting the window at a different point of
 * the run each round, the same for every variant of the round, averages that out over the rounds.
 */
const phaseOffset = r => (config.phase > 0 ? r % (config.phase + 1) : 0);

const cpuKey = workload => (workload === 'server' ? 'serverCpuUs' : 'clientCpuUs');
const median = xs => summarize(xs).median;
const mean = xs => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * A process's figures, in CPU µs per burst pair (request + standalone). The headline, `both`, is the process's CPU
 * from the start of its first timed burst to the end of its last, over the number of pairs: CPU adds up, a user pays
 * all of it, and work that goes on after a burst's loop belongs to it: the SDK's writes reach the socket after the
 * loop's last `await` (the loop only enqueues them), and concurrent marking on V8's helper threads runs on.
 * `inBursts` counts only the time inside the bursts (the headline until 2026-12-02, night), and
 * `request`/`standalone` split it by stream kind. The medians of the bursts (`medians`) are kept for the earlier
 * records.
 */
function figures(run, workload) {
  const key = cpuKey(workload);
  const side = workload === 'server' ? 'server' : 'client';
  const of = kind => run.bursts.filter(b => b.kind === kind).map(b => b[key]);
  const request = of('request');
  const standalone = of('standalone');
  const means = { request: mean(request), standalone: mean(standalone) };
  const pairs = run.bursts.length / 2;
  const span = cpuSpent(run.bursts[0][side].start, run.bursts.at(-1)[side].end);
  return {
    ...means,
    both: span.cpuUs / pairs,
    inBursts: means.request + means.standalone,
    medians: {
      request: median(request),
      standalone: median(standalone),
      both: median(request.map((r, i) => r + standalone[i])),
    },
    threads: span.threads && Object.fromEntries(THREAD_GROUPS.map(g => [g, span.threads[g] / pairs])),
    // Each timed burst as measured, in order (where a process's GC work lands shows here), one line each:
    // "<kind> <CPU µs>[ main <µs> v8 <µs>]".
    bursts: run.bursts.map(b =>
      burstLine(b.kind, b[key], b[workload === 'server' ? 'serverThreads' : 'clientThreads']),
    ),
    rssBytes: run.rssBytes,
  };
}

function burstLine(kind, cpuUs, threads) {
  const line = `${kind} ${Math.round(cpuUs)}`;
  return threads ? `${line} main ${Math.round(threads.main)} v8 ${Math.round(threads.v8)}` : line;
}

/** Instructions of the measured side's process (all its threads), from callgrind's totals. */
async function instructions(workload, variant, timed, dir) {
  const file = join(dir, `${workload}-${variant}-${timed}.out`);
  const launcher = [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${file}`,
    '--dump-instr=no',
    '--dump-line=no',
  ];
  const side = workload === 'server' ? { serverLauncher: launcher } : { clientLauncher: launcher };
  await pair(workload, variant, { ...side, bursts: { warmup: cg.warmup, timed } });
  const text = readFileSync(file, 'utf8');
  const totals = [...text.matchAll(/^(?:summary|totals): (\d+)/gm)].map(m => Number(m[1]));
  if (!totals.length) throw new Error(`no totals in ${file}`);
  return Math.max(...totals);
}

// --- measure ---

const startedAt = new Date();
const loadBefore = os.loadavg();
const rounds = { server: [], client: [] };
const profiles = {};
const instructionCounts = {};
try {
  for (let r = 0; r < config.rounds; r++) {
    for (const workload of config.workloads) {
      const k = config.variants.length;
      const order = config.variants.map((_, i) => config.variants[(i + r) % k]);
      const results = {};
      const warmup = config.warmup + phaseOffset(r);
      for (const variant of order) {
        results[variant] = figures(await pair(workload, variant, { bursts: { warmup } }), workload);
      }
      rounds[workload].push({ order, warmup, results });
      // Kept as the run goes: a run cut short still leaves its rounds.
      writeFileSync(join(root, '.tmp', 'outside-in.partial.json'), `${JSON.stringify({ config, rounds }, null, 2)}\n`);
      const ratio = results.forkwatch.both / results.bare.both;
      const aa = results['bare-again'].both / results.bare.both;
      const before = results.before ? `, before/bare ${(results.before.both / results.bare.both).toFixed(3)}` : '';
      process.stderr.write(
        `round ${r + 1}/${config.rounds} ${workload}: bare ${(results.bare.both / 1000).toFixed(0)} ms CPU per burst pair, ` +
          `forkwatch/bare ${ratio.toFixed(3)}, A/A ${aa.toFixed(3)}${before}\n`,
      );
    }
  }
  if (cpuProfDir) {
    mkdirSync(cpuProfDir, { recursive: true });
    // One profiled process per variant: a whole-process comparison of bare and forkwatch finds what forkwatch
    // costs outside its own functions (GC, the SDK's code around the wrapped methods).
    for (const workload of config.workloads) {
      profiles[workload] = {};
      for (const variant of profVariants) {
        const dir = join(cpuProfDir, workload, variant);
        const prof = ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${cpuProfIntervalUs}`];
        await pair(workload, variant, workload === 'server' ? { server: prof } : { client: prof });
        profiles[workload][variant] = relative(root, dir);
      }
    }
  }
  if (callgrind) {
    const dir = join(scratch, 'callgrind');
    mkdirSync(dir, { recursive: true });
    for (const workload of config.workloads) {
      instructionCounts[workload] = {};
      for (const variant of cg.variants) {
        const counts = [];
        for (const timed of [0, cg.timed]) counts.push(await instructions(workload, variant, timed, dir));
        instructionCounts[workload][variant] = { perBurstPair: (counts[1] - counts[0]) / cg.timed, totals: counts };
        process.stderr.write(
          `callgrind ${workload} ${variant}: ${(instructionCounts[workload][variant].perBurstPair / 1e6).toFixed(1)} M instructions per burst pair\n`,
        );
      }
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// --- summarize ---

const KINDS = ['both', 'inBursts', 'request', 'standalone'];
const summary = {};
const measured = config.workloads.filter(w => rounds[w].length > 0);
for (const workload of measured) {
  const rs = rounds[workload];
  const ratio = (variant, kind) => summarize(rs.map(x => x.results[variant][kind] / x.results.bare[kind]));
  const medianRatio = variant => summarize(rs.map(x => x.results[variant].medians.both / x.results.bare.medians.both));
  summary[workload] = {
    absoluteUsPerBurst: Object.fromEntries(
      config.variants.map(v => [
        v,
        Object.fromEntries(KINDS.map(kind => [kind, summarize(rs.map(x => x.results[v][kind]))])),
      ]),
    ),
    forkwatch: Object.fromEntries(KINDS.map(kind => [kind, ratio('forkwatch', kind)])),
    aa: Object.fromEntries(KINDS.map(kind => [kind, ratio('bare-again', kind)])),
    // The same ratios from each process's median burst (the statistic of the records before 2026-12-02, evening).
    byMedianBurst: {
      forkwatch: medianRatio('forkwatch'),
      aa: medianRatio('bare-again'),
      before: config.variants.includes('before') ? medianRatio('before') : undefined,
    },
    before: config.variants.includes('before')
      ? Object.fromEntries(KINDS.map(kind => [kind, ratio('before', kind)]))
      : undefined,
    // The same ratio per thread group: is the difference code that runs (main) or GC on V8's helpers (v8)?
    threads: rs.every(x => x.results.bare.threads)
      ? Object.fromEntries(
          THREAD_GROUPS.map(g => [
            g,
            {
              bareUs: summarize(rs.map(x => x.results.bare.threads[g])),
              forkwatch: summarize(rs.map(x => x.results.forkwatch.threads[g] / x.results.bare.threads[g])),
              aa: summarize(rs.map(x => x.results['bare-again'].threads[g] / x.results.bare.threads[g])),
              before: config.variants.includes('before')
                ? summarize(rs.map(x => x.results.before.threads[g] / x.results.bare.threads[g]))
                : undefined,
            },
          ]),
        )
      : undefined,
    // forkwatch's extra CPU per notification: the per-round difference over the notifications of a burst pair.
    extraUsPerNotification: summarize(
      rs.map(x => (x.results.forkwatch.both - x.results.bare.both) / (2 * config.count)),
    ),
  };
}
const targets = {
  server: summary.server && {
    maxRatio: 1.03,
    ratio: summary.server.forkwatch.both.median,
    aaIqr: [summary.server.aa.both.p25, summary.server.aa.both.p75],
    met:
      summary.server.forkwatch.both.median <= 1.03 &&
      summary.server.forkwatch.both.median >= summary.server.aa.both.p25 &&
      summary.server.forkwatch.both.median <= summary.server.aa.both.p75,
  },
  client: summary.client && {
    maxRatio: 1.02,
    ratio: summary.client.forkwatch.both.median,
    met: summary.client.forkwatch.both.median <= 1.02,
  },
};
const result = {
  command: `node bench/outside-in.mjs${args.length ? ` ${args.join(' ')}` : ''}`,
  startedAt: startedAt.toISOString(),
  durationSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
  config,
  machine: {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    loadAverageBefore: loadBefore,
    loadAverageAfter: os.loadavg(),
  },
  summary,
  targets,
  profiles,
  instructionCounts: callgrind ? { ...cg, perWorkload: instructionCounts } : undefined,
  rounds,
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);

// --- print ---

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const cell = s => `${f(s.median)} [${f(s.p25)}–${f(s.p75)}]`;
console.log(
  `\nforkwatch outside-in: ${config.rounds} rounds × ${config.variants.length} fresh process pairs; ${config.timed} timed bursts of ` +
    `${config.count} notifications per stream kind per process after ${config.warmup}${config.phase ? `–${config.warmup + config.phase}` : ''} warm-up pairs. Node ` +
    `${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ` +
    `${loadBefore[0].toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after, ${result.durationSeconds} s.\n`,
);
for (const workload of measured) {
  const s = summary[workload];
  const abs = s.absoluteUsPerBurst;
  console.log(
    `${workload}: CPU per burst pair (request + standalone; each process's mean), median over rounds: bare ${f(abs.bare.both.median / 1000, 1)} ms, ` +
      `bare-again ${f(abs['bare-again'].both.median / 1000, 1)} ms, forkwatch ${f(abs.forkwatch.both.median / 1000, 1)} ms`,
  );
  for (const kind of KINDS) {
    console.log(
      `  ${kind.padEnd(11)} forkwatch / bare ${cell(s.forkwatch[kind])}   A/A (bare-again / bare) ${cell(s.aa[kind])}`,
    );
  }
  if (s.before) {
    for (const kind of KINDS) console.log(`  ${kind.padEnd(11)} before / bare    ${cell(s.before[kind])}`);
  }
  const m = s.byMedianBurst;
  console.log(
    `  by each process's median burst pair: forkwatch / bare ${cell(m.forkwatch)}   A/A ${cell(m.aa)}` +
      (m.before ? `   before / bare ${cell(m.before)}` : ''),
  );
  for (const [group, t] of Object.entries(s.threads ?? {})) {
    if (!(t.bareUs.median > 0)) continue; // no CPU there at all (the "other" threads, most runs)
    console.log(
      `  ${`${group} thread${group === 'main' ? '' : 's'}`.padEnd(11)} forkwatch / bare ${cell(t.forkwatch)}   A/A ${cell(t.aa)}` +
        (t.before ? `   before / bare ${cell(t.before)}` : '') +
        `   (bare ${f(t.bareUs.median / 1000, 1)} ms per burst pair)`,
    );
  }
  console.log(
    `  forkwatch's extra CPU per notification: ${f(s.extraUsPerNotification.median, 2)} µs (IQR ${f(s.extraUsPerNotification.p25, 2)} to ${f(s.extraUsPerNotification.p75, 2)})`,
  );
}
if (targets.server)
  console.log(
    `target server: median ratio ${f(targets.server.ratio)} ≤ 1.03 and within the A/A IQR [${f(targets.server.aaIqr[0])}–${f(targets.server.aaIqr[1])}]: ${targets.server.met ? 'met' : 'NOT MET'}`,
  );
if (targets.client)
  console.log(
    `target client: median ratio ${f(targets.client.ratio)} ≤ 1.02: ${targets.client.met ? 'met' : 'NOT MET'}`,
  );
for (const [workload, c] of Object.entries(instructionCounts)) {
  if (!c.bare || !c.forkwatch) continue;
  const extra = (c.forkwatch.perBurstPair - c.bare.perBurstPair) / (2 * config.count);
  console.log(
    `callgrind ${workload}: ${f(c.bare.perBurstPair / 1e6, 1)} M instructions per burst pair bare, ` +
      `${f(c.forkwatch.perBurstPair / 1e6, 1)} M with forkwatch: ratio ${f(c.forkwatch.perBurstPair / c.bare.perBurstPair)}, ` +
      `${f(extra, 0)} instructions more per notification`,
  );
}
if (Object.keys(profiles).length)
  console.log(`cpu profiles: ${Object.values(profiles).flatMap(Object.values).join(', ')}`);
console.log(`wrote ${relative(root, out)}`);
