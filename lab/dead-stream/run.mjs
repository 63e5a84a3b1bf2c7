#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Dead-stream holds on the reference deployment (issue 41.5): for each variant, `--trials` clients each killed at a
// spread of moments within the keep-alive period, the time from the kill to the first resume answered 200 (sent
// every 100 ms; 409s before it). See measure.mjs. Prints one line per variant; --json writes the raw numbers.
//
//   node lab/dead-stream/run.mjs --trials 6
//   node lab/dead-stream/run.mjs --trials 6 --only haproxy-without-abortonclose
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { measureHold, startDeployment } from './measure.mjs';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const trials = Number(value('--trials', 6));
const only = value('--only');
const out = value('--json');

const VARIANTS = [
  { name: 'direct (no balancer), keep-alive 15 s', front: 'none', keepAliveMs: 15_000 },
  { name: 'haproxy-without-abortonclose, keep-alive 15 s', front: 'haproxy', abortOnClose: false, keepAliveMs: 15_000 },
  { name: 'haproxy-without-abortonclose, keep-alive 5 s', front: 'haproxy', abortOnClose: false, keepAliveMs: 5000 },
  { name: 'haproxy reference (abortonclose), keep-alive 15 s', front: 'haproxy', keepAliveMs: 15_000 },
  { name: 'haproxy reference (abortonclose), keep-alive 5 s', front: 'haproxy', keepAliveMs: 5000 },
  { name: 'nginx reference (proxy_buffering off), keep-alive 15 s', front: 'nginx', keepAliveMs: 15_000 },
  {
    name: 'nginx buffered control (proxy_buffering on), keep-alive 15 s',
    front: 'nginx',
    buffered: true,
    keepAliveMs: 15_000,
  },
].filter(v => !only || v.name.startsWith(only));

console.log(
  `dead-stream holds — ${new Date().toISOString()} — ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ` +
    `${process.version}, load ${os.loadavg()[0].toFixed(1)}; ${trials} clients killed per variant`,
);
const results = [];
for (const variant of VARIANTS) {
  const deployment = await startDeployment(variant);
  try {
    const period = variant.keepAliveMs;
    // Kill moments spread over one keep-alive period: the hold depends on where in it the client dies.
    const runs = await Promise.all(
      Array.from({ length: trials }, (_, i) => measureHold(deployment.url, { killDelayMs: (i * period) / trials })),
    );
    const holds = runs.map(r => r.holdMs);
    const done = holds.filter(h => h !== undefined).sort((a, b) => a - b);
    const conflicts = runs.reduce((n, r) => n + r.conflicts, 0);
    const other = runs.flatMap(r => r.statuses);
    console.log(
      `${variant.name.padEnd(62)} hold ms min ${done[0] ?? '-'} median ${done[Math.floor(done.length / 2)] ?? '-'} ` +
        `max ${done.at(-1) ?? '-'}; never released ${holds.length - done.length}; 409s ${conflicts}` +
        (other.length ? `; other statuses ${[...new Set(other)].join(',')}` : ''),
    );
    results.push({ ...variant, holds, conflicts, other });
  } finally {
    await deployment.stop();
  }
}
if (out) writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), trials, results }, null, 2));
