#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Prints the results of a benchmark run (bench/results/latest.json, or the file given) as Markdown tables, ready for
// docs/benchmark.md and the README.
//
//   node bench/report.mjs [bench/results/latest.json]
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const file = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'results', 'latest.json');
const r = JSON.parse(readFileSync(file, 'utf8'));
const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const pct = x => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)} %` : '—');
const ratio = s => `${f(s.median)} [${f(s.p25)}–${f(s.p75)}] (${f(s.min, 2)}–${f(s.max, 2)})`;
const lines = [];
/** forkwatch's own code relative to everything else the process spent CPU on. */
const profiledOverhead = p => p.forkwatchSelfUsPerFrame / (p.cpuUsPerFrameMeasured - p.forkwatchSelfUsPerFrame);
const out = s => lines.push(s);

/** The command that reproduces this run's configuration, whatever the defaults are now. */
function command(c) {
  if (c.mode === 'quick') return 'npm run bench -- --quick';
  const args = [`--rounds ${c.rounds}`, `--count ${c.count}`, `--warmup ${c.warmup}`];
  if (c.ab) args.push(`--ab-processes ${c.ab.processes}`, `--ab-pairs ${c.ab.pairs}`, `--ab-count ${c.ab.count}`);
  return `npm run bench -- ${args.join(' ')}`;
}
out(
  `Measured with \`${command(r.config)}\` on ${r.startedAt.slice(0, 10)}: Node ${r.machine.node}, ${r.machine.cpus} × ${r.machine.cpuModel}, ` +
    `${r.machine.totalMemoryGiB} GiB; load average ${r.machine.loadAverageBefore[0].toFixed(2)} before and ` +
    `${r.machine.loadAverageAfter[0].toFixed(2)} after (a shared machine: other work ran during the run). ` +
    `${r.config.rounds} alternating rounds, ${r.durationSeconds} s in all.`,
);
out('');
out('| variant | warm CPU µs/frame | cold CPU µs/frame | events/s | RSS MiB |');
out('| --- | ---: | ---: | ---: | ---: |');
for (const [name, v] of Object.entries(r.variants)) {
  const a = v.absolute;
  out(
    `| ${name}: ${v.label} | ${f(a.cpuUsPerFrame.median, 2)} | ${f(a.coldCpuUsPerFrame.median, 2)} | ${Math.round(a.eventsPerSecond.median)} | ${f(a.rssBytes.median / 2 ** 20, 1)} |`,
  );
}
out('');
out('Per-round ratios to the baseline of the same round: median [interquartile range] (min–max).');
out('');
out('| variant / baseline | warm CPU per frame | cold CPU per frame | events/s | RSS |');
out('| --- | --- | --- | --- | --- |');
for (const c of r.comparisons) {
  const x = c.ratios;
  out(
    `| ${c.variant} / ${c.baseline} | ${ratio(x.cpuUsPerFrame)} | ${ratio(x.coldCpuUsPerFrame)} | ${ratio(x.eventsPerSecond)} | ${ratio(x.rssBytes)} |`,
  );
}
if (r.inProcess) {
  const p = r.inProcess;
  out('');
  out(
    `In-process A/B (${p.processes} warm NodeSDK + forkwatch processes, ${p.pairs} pairs of ${p.countPerCall}-notification calls with ` +
      `forkwatch on and off): CPU per frame on/off ${ratio(p.ratio)}, a difference of ${f(p.deltaUsPerFrame.median, 2)} µs/frame ` +
      `(IQR ${f(p.deltaUsPerFrame.p25, 2)} to ${f(p.deltaUsPerFrame.p75, 2)}); ratio of the lower quartiles, median over the ` +
      `processes: ${f(p.lowerQuartileRatio.median)} (${f(p.lowerQuartileRatio.min)}–${f(p.lowerQuartileRatio.max)}).`,
  );
}
if (r.profile) {
  const p = r.profile;
  const files = Object.entries(p.forkwatchSelfUsPerFrameByFile)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${f(v, 2)}`)
    .join(', ');
  out('');
  out(
    `Sampling profiler (\`--cpu-prof\`, one NodeSDK + forkwatch process, ${p.frames} frames of ${p.window}): forkwatch's own ` +
      `code took ${f(p.forkwatchSelfUsPerFrame, 2)} µs/frame (${files}), against ${f(p.cpuUsPerFrameMeasured, 1)} µs/frame of process ` +
      `CPU in that call: ${pct(profiledOverhead(p))} over the rest. Garbage collection was ` +
      `${pct(p.gcShareOfMainThread).replace('+', '')} of the main thread's busy time (${f(p.mainThreadBusyUsPerFrame, 1)} µs/frame).`,
  );
}
if (r.detector) {
  const c = r.detector.cost;
  const m = r.detector.memory;
  out('');
  out('| detector (micro-benchmark, warm) | value |');
  out('| --- | ---: |');
  out(
    `| observer + ledger, 16 KiB chunks (${c.chunks16KiB.bytesPerFrame} B frames) | ${Math.round(c.chunks16KiB.detector.nsPerFrame)} ns/frame |`,
  );
  out(`| observer + ledger, one frame per chunk | ${Math.round(c.framePerChunk.detector.nsPerFrame)} ns/frame |`);
  out(
    `| observer alone, 16 KiB chunks / one frame per chunk | ${Math.round(c.chunks16KiB.observerOnly.nsPerFrame)} / ${Math.round(c.framePerChunk.observerOnly.nsPerFrame)} ns/frame |`,
  );
  out(`| pass-through stream (observeStream) | ${Math.round(r.detector.wrapper.wrapperNsPerChunk)} ns/chunk |`);
  out(
    `| tracked session (${m.session.sessions} sessions, ${m.session.recentIds} recent ids, ${m.session.lastConsumedIdLength}-char ids) | ${Math.round(m.session.bytesPerSession)} B |`,
  );
  out(`| observed stream (frame observer mid-stream) | ${Math.round(m.observer.bytesPerObserver)} B |`);
}
const t = r.targets;
out('');
out(
  `Targets: forkwatch's own CPU cost ≤ 3 % (aim 1 %): ${r.profile ? pct(profiledOverhead(r.profile)) : '—'} by the profiler, ` +
    `${pct(t.forkwatchInProcessCpuOverhead)} by the in-process A/B, ${pct(t.forkwatchOwnCpuOverhead)} across ` +
    `processes (NodeSDK + forkwatch / NodeSDK); ≤ 1 KiB per tracked session: ${Math.round(t.bytesPerSession)} B.`,
);
console.log(lines.join('\n'));
