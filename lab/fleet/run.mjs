#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fleet lab: real SDK server replicas behind a routing proxy, hundreds of client sessions with faults, scored
// against per-session ground truth. See docs/fleet.md.
//
//   npm run fleet                                   every policy, 3 replicas, 200 sessions
//   node lab/fleet/run.mjs --policy sticky-shared --sessions 2000 --clients 8
//   node lab/fleet/run.mjs --policy sticky-shared --soak-minutes 30
//   node lab/fleet/run.mjs --no-prometheus --json out.json
//   node lab/fleet/run.mjs --policy haproxy-sticky-redis,haproxy-rr-redis    the real parts (HAProxy, nginx, Redis)
//   node lab/fleet/run.mjs --policy haproxy-rr-redis --judge-alone          without forkwatch's sharedEventStore
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { POLICIES, runFleet } from './fleet.mjs';
import { scoreFleet } from './score.mjs';
import { formatScore } from './format.mjs';
import { gateFailures, gateRow } from './gate.mjs';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const policies = value('--policy', 'all') === 'all' ? Object.keys(POLICIES) : value('--policy').split(',');
const options = {
  servers: Number(value('--servers', 3)),
  sessions: Math.min(2000, Number(value('--sessions', 200))),
  clients: Number(value('--clients', 4)),
  rounds: Number(value('--rounds', 4)),
  soakMs: Number(value('--soak-minutes', 0)) * 60_000,
  prometheus: !args.includes('--no-prometheus'),
  crash: !args.includes('--no-crash'),
  // Redis policies: the replicas do not know their store is shared (forkwatch's sharedEventStore off).
  judgeAlone: args.includes('--judge-alone'),
  // Without forkwatch's fleet delivery marks in Redis (issue 49): the per-process ledgers and the fleet balance.
  fleetMarks: !args.includes('--no-fleet-marks'),
  onProgress: line => process.stderr.write(`  · ${line}\n`),
};
const out = value('--json');

const scores = [];
console.log(
  `forkwatch fleet lab — ${new Date().toISOString()} — ${os.cpus().length} × ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map(l => l.toFixed(1))
    .join(' ')}`,
);
console.log(`command: node lab/fleet/run.mjs ${args.join(' ')}\n`);
for (const policy of policies) {
  process.stderr.write(`${policy}: ${POLICIES[policy]?.story ?? ''}\n`);
  const run = await runFleet({ ...options, policy });
  const score = scoreFleet(run);
  scores.push(score);
  console.log(formatScore(score));
}
if (out)
  writeFileSync(
    out,
    JSON.stringify(
      {
        at: new Date().toISOString(),
        host: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
        args,
        scores,
      },
      null,
      2,
    ),
  );

// Recall per policy by the signals the shipped alerts read, and the floors (lab/fleet/gate.mjs).
console.log(
  '\nrecall by the signals the shipped alerts read (policy | ground truth | sessions | events | marks | page | floor)',
);
for (const score of scores) console.log(`  ${gateRow(score)}`);
const failed = scores.filter(score => gateFailures(score).length > 0);
if (failed.length > 0) {
  console.log(
    `\n${failed.length} of ${scores.length} policies missed their floor: ${failed.map(s => s.policy).join(', ')}`,
  );
  process.exitCode = 1;
}
