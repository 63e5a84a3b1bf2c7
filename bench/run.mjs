#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// forkwatch's overhead benchmark.
//
// Streams notifications from a real MCP SDK server (its own process) through the real SDK client over loopback
// HTTP, with each telemetry variant in its own client process (heap and GC never carry over), in alternating
// rounds: every round runs every variant once, in a rotated order. Per round, each variant is compared with its
// baseline of the same round; the report gives the medians of those ratios with their spread. Then an in-process
// A/B of forkwatch on and off in warm NodeSDK + forkwatch processes (adjacent calls, so machine noise largely cancels),
// and a micro-benchmark of the detector itself (ns per frame, bytes per tracked session).
//
//   npm run bench                       full run (about 7 minutes on 2 cores)
//   npm run bench -- --quick            CI-size run (under a minute)
//   node bench/run.mjs --rounds 10 --count 5000 --variants bare,forkwatch
//   node bench/run.mjs --no-detector --no-ab --out /tmp/result.json
//   node bench/report.mjs               the last results as Markdown tables
//   node bench/run.mjs --no-short-sessions  without the many-short-sessions bench that follows (short-sessions.mjs)
//
// Writes bench/results/latest.json (or --out) and prints a table. Run `node scripts/build.mjs` first (npm run bench
// does): forkwatch is loaded from a private copy of build/src taken at the start, so a rebuild during the run
// cannot change what is measured.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { quantile, summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const require_ = (await import('node:module')).createRequire(import.meta.url);
const { VARIANTS } = require_('./variants.cjs');

const args = process.argv.slice(2);
const flag = name => args.includes(name);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = flag('--quick');
const config = {
  mode: quick ? 'quick' : 'full',
  rounds: Number(value('--rounds', quick ? 3 : 12)),
  count: Number(value('--count', quick ? 5000 : 20000)),
  warmup: Number(value('--warmup', quick ? 5000 : 50000)),
  bytes: Number(value('--bytes', 64)),
  variants: value('--variants', Object.keys(VARIANTS).join(',')).split(','),
  detector: !flag('--no-detector'),
  // One NodeSDK + forkwatch process under the sampling profiler: forkwatch's own functions' self time per frame.
  profile: flag('--no-profile') ? undefined : { warmup: quick ? 5000 : 50000, count: quick ? 20000 : 100000 },
  // In-process A/B of NodeSDK + forkwatch: processes × pairs of (forkwatch on, off) tool calls of `count` notifications.
  ab: flag('--no-ab')
    ? undefined
    : {
        processes: Number(value('--ab-processes', quick ? 1 : 3)),
        pairs: Number(value('--ab-pairs', quick ? 6 : 8)),
        count: Number(value('--ab-count', quick ? 5000 : 10000)),
        settle: Number(value('--ab-settle', 2000)),
      },
};
const out = value('--out', join(here, 'results', 'latest.json'));
for (const v of config.variants)
  if (!VARIANTS[v]) throw new Error(`unknown variant ${v}; known: ${Object.keys(VARIANTS)}`);
if (!config.variants.includes('bare')) config.variants.unshift('bare');

// A private copy of the build: other work may rebuild build/ while this runs.
const built = join(root, 'build', 'src');
if (!existsSync(join(built, 'index.js'))) {
  console.error('build/src is missing: run `node scripts/build.mjs` first (or `npm run bench`).');
  process.exit(2);
}
const snapshot = join(root, '.tmp', `bench-forkwatch-${process.pid}`);
rmSync(snapshot, { recursive: true, force: true });
mkdirSync(snapshot, { recursive: true });
cpSync(built, join(snapshot, 'src'), { recursive: true });
const forkwatchRoot = join(snapshot, 'src');
const forkwatchEntry = join(forkwatchRoot, 'index.js');

function startServer() {
  const child = spawn(process.execPath, [join(here, 'server.cjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('bench server did not start')), 15_000);
    child.stdout.on('data', chunk => {
      text += chunk;
      const m = /LISTENING (\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${m[1]}/mcp` });
      }
    });
    child.once('exit', code => reject(new Error(`bench server exited with ${code}`)));
  });
}

function runNode(argv, env, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', c => (stdout += c));
    child.stderr.on('data', c => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', code => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`${argv.join(' ')} exited ${code}:\n${stderr}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop()));
      } catch (_error) {
        reject(new Error(`unreadable output of ${argv.join(' ')}: ${stdout}\n${stderr}`));
      }
    });
  });
}

const runClient = (variant, url) =>
  runNode(
    ['--expose-gc', join(here, 'client.cjs')],
    {
      BENCH: JSON.stringify({
        variant,
        url,
        count: config.count,
        warmup: config.warmup,
        bytes: config.bytes,
        forkwatchEntry,
      }),
    },
    300_000,
  );

/**
 * Runs NodeSDK + forkwatch once under --cpu-prof and attributes the samples: the self time of forkwatch's own code
 * (its files in the build snapshot) per frame streamed, beside garbage collection and the rest. Sampling attributes
 * time to the code that runs, so this is immune to the heap-sizing and GC differences between processes that blur
 * the ratios, and (to first order) to other load on the machine.
 */
async function profiledRun(url) {
  const dir = join(snapshot, 'profile');
  mkdirSync(dir, { recursive: true });
  const { warmup, count } = config.profile;
  const run = await runNode(
    ['--expose-gc', '--cpu-prof', `--cpu-prof-dir=${dir}`, join(here, 'client.cjs')],
    { BENCH: JSON.stringify({ variant: 'sdk+forkwatch', url, count, warmup, bytes: config.bytes, forkwatchEntry }) },
    600_000,
  );
  const file = readdirSync(dir).find(name => name.endsWith('.cpuprofile'));
  const prof = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const nodes = new Map(prof.nodes.map(n => [n.id, n]));
  // Only the samples of the timed call (warm), when the profile's clock matches the client's; all of them otherwise.
  const [from, to] = run.timedWindowUs;
  const windowed = from >= prof.startTime && to <= prof.endTime;
  const selfUs = new Map();
  let at = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    at += prof.timeDeltas[i] ?? 0;
    if (windowed && (at < from || at > to)) continue;
    selfUs.set(prof.samples[i], (selfUs.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  const byFile = {};
  let busyUs = 0;
  let gcUs = 0;
  let forkwatchUs = 0;
  for (const [id, us] of selfUs) {
    const frame = nodes.get(id).callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') continue;
    busyUs += us;
    if (frame.functionName === '(garbage collector)') gcUs += us;
    if (frame.url.includes(snapshot)) {
      forkwatchUs += us;
      const name = relative(
        forkwatchRoot,
        fileURLToPath(frame.url.startsWith('file:') ? frame.url : `file://${frame.url}`),
      );
      byFile[name] = (byFile[name] ?? 0) + us;
    }
  }
  const frames = windowed ? count : warmup + count;
  return {
    variant: 'sdk+forkwatch',
    window: windowed ? 'the timed (warm) call' : 'the whole run (profile clock not aligned)',
    frames,
    cpuUsPerFrameMeasured: run.cpuUsPerFrame,
    mainThreadBusyUsPerFrame: busyUs / frames,
    gcShareOfMainThread: gcUs / busyUs,
    forkwatchSelfUsPerFrame: forkwatchUs / frames,
    forkwatchShareOfMainThread: forkwatchUs / busyUs,
    forkwatchSelfUsPerFrameByFile: Object.fromEntries(Object.entries(byFile).map(([k, v]) => [k, v / frames])),
  };
}

// --- measure ---

const startedAt = new Date();
const loadBefore = os.loadavg();
const rounds = [];
const server = await startServer();
let detector;
let profile;
const abProcesses = [];
try {
  const k = config.variants.length;
  for (let r = 0; r < config.rounds; r++) {
    const order = config.variants.map((_, i) => config.variants[(i + r) % k]);
    const results = {};
    for (const variant of order) results[variant] = await runClient(variant, server.url);
    rounds.push({ order, results });
    const fw =
      results['sdk+forkwatch'] && results.sdk
        ? results['sdk+forkwatch'].cpuUsPerFrame / results.sdk.cpuUsPerFrame
        : undefined;
    process.stderr.write(
      `round ${r + 1}/${config.rounds}: bare ${results.bare.cpuUsPerFrame.toFixed(1)} µs/frame` +
        (fw !== undefined ? `, NodeSDK+forkwatch / NodeSDK ${fw.toFixed(3)}` : '') +
        '\n',
    );
  }
  if (config.ab) {
    for (let p = 0; p < config.ab.processes; p++) {
      process.stderr.write(`in-process A/B ${p + 1}/${config.ab.processes}…\n`);
      const env = {
        BENCH: JSON.stringify({
          variant: 'sdk+forkwatch',
          url: server.url,
          warmup: config.warmup,
          bytes: config.bytes,
          forkwatchEntry,
          ab: { pairs: config.ab.pairs, count: config.ab.count, settle: config.ab.settle },
        }),
      };
      abProcesses.push(await runNode(['--expose-gc', join(here, 'client.cjs')], env, 600_000));
    }
  }
  if (config.profile) {
    process.stderr.write('profiled run…\n');
    profile = await profiledRun(server.url);
  }
  if (config.detector) {
    process.stderr.write('detector micro-benchmark…\n');
    detector = await runNode(
      ['--expose-gc', join(here, 'detector.cjs')],
      { BENCH_DETECTOR: JSON.stringify({ forkwatchRoot, quick }) },
      300_000,
    );
  }
} finally {
  server.child.kill('SIGTERM');
  rmSync(snapshot, { recursive: true, force: true });
}

// --- summarize ---

const METRICS = ['cpuUsPerFrame', 'eventsPerSecond', 'rssBytes', 'coldCpuUsPerFrame'];
const perVariant = {};
for (const variant of config.variants) {
  const samples = Object.fromEntries(METRICS.map(m => [m, rounds.map(r => r.results[variant][m])]));
  perVariant[variant] = {
    label: VARIANTS[variant].label,
    absolute: Object.fromEntries(METRICS.map(m => [m, summarize(samples[m])])),
  };
}
/** Per-round ratios (and CPU differences) of a variant to a baseline of the same round. */
function compare(variant, baseline) {
  const ratios = Object.fromEntries(
    METRICS.map(m => [m, summarize(rounds.map(r => r.results[variant][m] / r.results[baseline][m]))]),
  );
  const cpuDeltaUsPerFrame = summarize(
    rounds.map(r => r.results[variant].cpuUsPerFrame - r.results[baseline].cpuUsPerFrame),
  );
  return { variant, baseline, ratios, cpuDeltaUsPerFrame };
}
const comparisons = [];
for (const variant of config.variants) {
  if (variant === 'bare') continue;
  comparisons.push(compare(variant, 'bare'));
  if (VARIANTS[variant].baseline === 'sdk' && config.variants.includes('sdk'))
    comparisons.push(compare(variant, 'sdk'));
}
const own = comparisons.find(c => c.variant === 'sdk+forkwatch' && c.baseline === 'sdk');
const abPairsAll = abProcesses.flatMap(p => p.pairs);
const inProcess = abPairsAll.length
  ? {
      variant: 'sdk+forkwatch',
      processes: abProcesses.length,
      pairs: abPairsAll.length,
      countPerCall: config.ab.count,
      ratio: summarize(abPairsAll.map(p => p.on / p.off)),
      deltaUsPerFrame: summarize(abPairsAll.map(p => p.on - p.off)),
      onUsPerFrame: summarize(abPairsAll.map(p => p.on)),
      offUsPerFrame: summarize(abPairsAll.map(p => p.off)),
      // Interference from other processes only ever adds CPU time: the lower quartiles of each state, per process,
      // are the least disturbed estimate. Median over processes of p25(on) / p25(off).
      lowerQuartileRatio: summarize(
        abProcesses.map(
          p =>
            quantile(
              p.pairs.map(x => x.on),
              0.25,
            ) /
            quantile(
              p.pairs.map(x => x.off),
              0.25,
            ),
        ),
      ),
      raw: abProcesses.map(p => p.pairs),
    }
  : undefined;
const alone = comparisons.find(c => c.variant === 'forkwatch' && c.baseline === 'bare');
const session = detector?.memory.session.bytesPerSession;
const targets = {
  cpuOverheadMax: 0.03,
  cpuOverheadAim: 0.01,
  bytesPerSessionMax: 1024,
  forkwatchOwnCpuOverhead: own ? own.ratios.cpuUsPerFrame.median - 1 : undefined,
  forkwatchInProcessCpuOverhead: inProcess ? inProcess.ratio.median - 1 : undefined,
  // forkwatch's own code relative to everything else the process spent CPU on, in the profiled (warm) call.
  forkwatchProfiledCpuOverhead: profile
    ? profile.forkwatchSelfUsPerFrame / (profile.cpuUsPerFrameMeasured - profile.forkwatchSelfUsPerFrame)
    : undefined,
  forkwatchAloneCpuOverhead: alone ? alone.ratios.cpuUsPerFrame.median - 1 : undefined,
  bytesPerSession: session,
};
// The profiler attributes forkwatch's own time directly, free of the GC and machine noise that blurs the ratios: it
// decides when it ran; then the in-process A/B; the cross-process median last.
const cpuOverhead =
  targets.forkwatchProfiledCpuOverhead ?? targets.forkwatchInProcessCpuOverhead ?? targets.forkwatchOwnCpuOverhead;
targets.cpuWithinMax = cpuOverhead !== undefined ? cpuOverhead <= targets.cpuOverheadMax : undefined;
targets.memoryWithinMax = session !== undefined ? session <= targets.bytesPerSessionMax : undefined;

const command = `node bench/run.mjs${args.length ? ` ${args.join(' ')}` : ''}`;
const result = {
  command: `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`,
  runner: command,
  startedAt: startedAt.toISOString(),
  durationSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
  config,
  machine: {
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    totalMemoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadAverageBefore: loadBefore,
    loadAverageAfter: os.loadavg(),
  },
  workload:
    'one MCP session per client process; one tools/call whose POST SSE stream carries `count` notifications/message ' +
    `(payload ${config.bytes} B of text, SDK-format event ids from the SDK's InMemoryEventStore), after a warm-up call of ` +
    '`warmup` notifications; CPU is process.cpuUsage() of the client around the timed call (which starts after a forced ' +
    'full GC), events/s by wall clock, RSS at the end',
  variants: perVariant,
  comparisons,
  inProcess,
  profile,
  detector,
  targets,
  rounds,
};
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);

// --- print ---

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const pct = x => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%` : '—');
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);
console.log(
  `\nforkwatch overhead: ${config.rounds} alternating rounds; per variant and round one client process streaming ` +
    `${config.warmup} (cold) then ${config.count} (warm) notifications. Node ${process.version}, ${os.cpus().length} × ` +
    `${os.cpus()[0]?.model ?? 'cpu'}, load average ${loadBefore[0].toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after.\n`,
);
console.log(
  `${pad('variant (medians)', 20)}${lpad('warm CPU µs/frame', 18)}${lpad('cold CPU µs/frame', 18)}${lpad('events/s', 10)}${lpad('RSS MiB', 9)}  set-up`,
);
for (const [variant, v] of Object.entries(perVariant)) {
  const a = v.absolute;
  console.log(
    `${pad(variant, 20)}${lpad(f(a.cpuUsPerFrame.median, 2), 18)}${lpad(f(a.coldCpuUsPerFrame.median, 2), 18)}` +
      `${lpad(Math.round(a.eventsPerSecond.median), 10)}${lpad(f(a.rssBytes.median / 2 ** 20, 1), 9)}  ${v.label}`,
  );
}
console.log(`\nper-round ratios to the same round's baseline: median [interquartile range]`);
console.log(
  `${pad('variant / baseline', 32)}${pad('warm CPU per frame', 24)}${pad('cold CPU per frame', 24)}${pad('events/s', 24)}${pad('RSS', 24)}`,
);
const cell = s => `${f(s.median)} [${f(s.p25)}–${f(s.p75)}]`;
for (const c of comparisons) {
  const r = c.ratios;
  console.log(
    `${pad(`${c.variant} / ${c.baseline}`, 32)}${pad(cell(r.cpuUsPerFrame), 24)}${pad(cell(r.coldCpuUsPerFrame), 24)}` +
      `${pad(cell(r.eventsPerSecond), 24)}${pad(cell(r.rssBytes), 24)}`,
  );
}
if (own) {
  const d = own.cpuDeltaUsPerFrame;
  const r = own.ratios.cpuUsPerFrame;
  console.log(
    `\nforkwatch's own cost (NodeSDK + forkwatch vs bare NodeSDK, warm): CPU ${pct(r.median - 1)} per frame ` +
      `(IQR ${pct(r.p25 - 1)} to ${pct(r.p75 - 1)}, range ${pct(r.min - 1)} to ${pct(r.max - 1)}), ` +
      `${f(d.median, 2)} µs/frame (IQR ${f(d.p25, 2)} to ${f(d.p75, 2)})`,
  );
}
if (inProcess) {
  const r = inProcess.ratio;
  const d = inProcess.deltaUsPerFrame;
  console.log(
    `forkwatch's own cost, in-process A/B (${inProcess.pairs} pairs of ${inProcess.countPerCall}-notification calls, ` +
      `forkwatch on vs off, in ${inProcess.processes} warm NodeSDK + forkwatch processes): CPU ${pct(r.median - 1)} per frame ` +
      `(IQR ${pct(r.p25 - 1)} to ${pct(r.p75 - 1)}), ${f(d.median, 2)} µs/frame (IQR ${f(d.p25, 2)} to ${f(d.p75, 2)}); ` +
      `lower quartiles on / off: ${pct(inProcess.lowerQuartileRatio.median - 1)}`,
  );
}
if (profile) {
  console.log(
    `forkwatch's own code under the sampling profiler (NodeSDK + forkwatch, ${profile.frames} frames, ${profile.window}): ` +
      `${f(profile.forkwatchSelfUsPerFrame, 2)} µs/frame of ${f(profile.cpuUsPerFrameMeasured, 1)} µs/frame of process CPU: ` +
      `${pct(targets.forkwatchProfiledCpuOverhead)} over the rest (garbage collection: ${pct(profile.gcShareOfMainThread)} of the main thread)`,
  );
}
const control = comparisons.find(c => c.variant === 'bare-again');
if (control) {
  const r = control.ratios.cpuUsPerFrame;
  console.log(
    `A/A control (bare again / bare): CPU ${pct(r.median - 1)} (IQR ${pct(r.p25 - 1)} to ${pct(r.p75 - 1)}, ` +
      `range ${pct(r.min - 1)} to ${pct(r.max - 1)}): the noise floor of this run`,
  );
}
if (detector) {
  const c = detector.cost;
  console.log(
    `detector (observer + ledger, warm): ${Math.round(c.chunks16KiB.detector.nsPerFrame)} ns/frame in 16 KiB chunks, ` +
      `${Math.round(c.framePerChunk.detector.nsPerFrame)} ns/frame at one frame per chunk ` +
      `(observer alone ${Math.round(c.chunks16KiB.observerOnly.nsPerFrame)} / ${Math.round(c.framePerChunk.observerOnly.nsPerFrame)}); ` +
      `pass-through stream ${Math.round(detector.wrapper.wrapperNsPerChunk)} ns/chunk`,
  );
  console.log(
    `memory: ${Math.round(detector.memory.session.bytesPerSession)} B per tracked session ` +
      `(${detector.memory.session.sessions} sessions, ${detector.memory.session.recentIds} recent ids each), ` +
      `${Math.round(detector.memory.observer.bytesPerObserver)} B per observed stream`,
  );
}
const verdict = ok =>
  quick
    ? 'indicative only (quick mode: too short for warm JIT)'
    : ok === undefined
      ? 'n/a'
      : ok
        ? 'within target'
        : 'OVER TARGET';
console.log(
  `targets: CPU ≤ 3% (aim 1%): ${pct(cpuOverhead)}` +
    `${profile ? ' (profiler)' : inProcess ? ' (in-process A/B)' : ''} → ${verdict(targets.cpuWithinMax)}; ` +
    `≤ 1 KiB per session: ${session !== undefined ? `${Math.round(session)} B` : '—'} → ${verdict(targets.memoryWithinMax)}`,
);
console.log(`\nwrote ${relative(root, out)} (${result.durationSeconds} s)`);

// Then forkwatch's cost where most MCP traffic is: many short sessions, both sides, its own A/A control
// (bench/short-sessions.mjs; its full size with `npm run bench`, a smoke test with --quick).
if (!flag('--no-short-sessions')) {
  const shortArgs = [join(here, 'short-sessions.mjs'), ...(quick ? ['--quick'] : [])];
  const code = await new Promise(resolve =>
    spawn(process.execPath, shortArgs, { stdio: 'inherit' }).on('exit', c => resolve(c ?? 1)),
  );
  if (code !== 0) process.exitCode = code;
}
