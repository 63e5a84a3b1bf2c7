#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The functions with the most self time in a V8 CPU profile (`node --cpu-prof`): how the hot-path costs were found.
//
//   node bench/profile-top.mjs <file.cpuprofile | dir> [--top 30] [--match forkwatch] [--skip-ms 3000]
//
// Prints self time per function (ms and share of the busy time, idle and program excluded), and per file when
// --by-file is given. --match keeps the functions whose URL contains the string.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const target = args[0];
const top = Number(value('--top', 30));
const match = value('--match', undefined);
const byFile = args.includes('--by-file');
// Samples in the first N ms of each profile are left out: start-up and module loading, not the workload.
const skipMs = Number(value('--skip-ms', 0));
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter(f => f.endsWith('.cpuprofile'))
      .map(f => join(target, f))
  : [target];

const self = new Map();
let busy = 0;
for (const file of files) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(prof.nodes.map(n => [n.id, n]));
  let at = 0;
  prof.samples.forEach((id, i) => {
    const us = prof.timeDeltas[i] ?? 0;
    at += us;
    if (at < skipMs * 1000) return;
    const frame = nodes.get(id).callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(program)') return;
    busy += us;
    const url = frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/build\//, 'build/');
    const key = byFile ? url || '(native)' : `${frame.functionName || '(anonymous)'} ${url}:${frame.lineNumber + 1}`;
    if (match && !frame.url.includes(match)) return;
    self.set(key, (self.get(key) ?? 0) + us);
  });
}
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
console.log(`${files.length} profile(s), ${(busy / 1000).toFixed(1)} ms busy`);
for (const [key, us] of rows) {
  console.log(`${(us / 1000).toFixed(1).padStart(9)} ms ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${key}`);
}
