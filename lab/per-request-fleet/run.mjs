#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The per-request fleet lab (protocol 2026-07-28) on the real parts: replica processes behind Debian's HAProxy
// round-robin, healthy traffic from client processes, every 2026-07-28 signal of forkwatch per replica and in total
// against the ground truth. See docs/fleet.md, "Protocol 2026-07-28 behind HAProxy". Exits 1 on a false alarm.
//
//   node scripts/build.mjs && node lab/per-request-fleet/run.mjs --replicas 3 --clients 4 --rounds 50
//   --without-abort-on-close  HAProxy without the reference's `option abortonclose` (a client's close never reaches
//                           the server: the control)
//   --cancel-every 2        a cancelled call every N rounds (0: none)   --cancel-after-ms 100   --job-ms 5000
//   --publish-every-ms 200  --json out.json
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { runClients, scrapeReplicas, settle, startPerRequestFleet, truthOfReplicas } from './fleet.mjs';
import { CLIENT_SERIES, SERVER_SERIES, scoreRun } from './score.mjs';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const o = {
  replicas: Number(value('--replicas', 3)),
  clients: Number(value('--clients', 4)),
  rounds: Number(value('--rounds', 20)),
  cancelEvery: Number(value('--cancel-every', 2)),
  cancelAfterMs: Number(value('--cancel-after-ms', 100)),
  jobMs: Number(value('--job-ms', 5000)),
  publishEveryMs: Number(value('--publish-every-ms', 200)),
  abortOnClose: !args.includes('--without-abort-on-close'),
};
const out = value('--json');
const progress = line => process.stderr.write(`  · ${line}\n`);

const startedAt = new Date();
const load = () =>
  os
    .loadavg()
    .map(l => l.toFixed(1))
    .join(' ');
console.log(
  `forkwatch per-request fleet lab — ${startedAt.toISOString()} — ${os.cpus().length} × ${os.cpus()[0]?.model}, ` +
    `Node ${process.version}, load ${load()}`,
);
console.log(`command: node lab/per-request-fleet/run.mjs ${args.join(' ')}\n`);

const fleet = await startPerRequestFleet({ replicas: o.replicas, abortOnClose: o.abortOnClose, onProgress: progress });
let score;
try {
  const configs = Array.from({ length: o.clients }, (_, i) => ({
    name: `c${i + 1}`,
    rounds: o.rounds,
    cancelEvery: o.cancelEvery,
    cancelAfterMs: o.cancelAfterMs,
    jobMs: o.jobMs,
  }));
  const t0 = Date.now();
  const run = await runClients(fleet, configs, { publishEveryMs: o.publishEveryMs, onProgress: progress });
  const seconds = (Date.now() - t0) / 1000;
  await settle(fleet, o.jobMs + 30_000);
  const [metrics, truths] = await Promise.all([scrapeReplicas(fleet), truthOfReplicas(fleet)]);
  score = scoreRun({
    replicas: fleet.replicas.map(r => ({ name: r.name, after: { metrics: metrics[r.name], truth: truths[r.name] } })),
    clients: run.clients,
    publishes: run.publishes,
  });
  Object.assign(score, { seconds, loadAfter: load(), holders: run.holders });
  print(score);
} finally {
  await fleet.stop();
}
if (out) {
  const host = { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version };
  writeFileSync(out, JSON.stringify({ at: startedAt.toISOString(), host, args, options: o, score }, null, 2));
}
process.exit(score.falseAlarms === 0 ? 0 : 1);

function print(s) {
  const t = s.totals;
  const w = 58;
  const cell = v => String(v).padStart(9);
  const row = (label, f, total) =>
    console.log(`${label.padEnd(w)}${s.replicas.map(r => cell(f(r))).join('')}${cell(total)}`);
  console.log(
    `${t.exchangesReceived} exchanges in ${s.seconds.toFixed(1)} s through HAProxy, ${s.replicasServing} replicas ` +
      `served them; load after ${s.loadAfter}\n`,
  );
  console.log(
    `${'ground truth (tools, HTTP layer)'.padEnd(w)}${s.replicas.map(r => cell(r.name)).join('')}${cell('total')}`,
  );
  row('exchanges received (POSTs with an id, not listen)', r => r.truth.exchangesReceived, t.exchangesReceived);
  row('  answered in full', r => r.truth.exchangesAnswered, t.answered);
  row('  closed by the client side before the end', r => r.truth.exchangesClosedEarly, t.closedEarlyHttp);
  row('tool executions', r => Object.values(r.truth.toolCalls).reduce((a, b) => a + b, 0), '');
  row('cancelled jobs that stopped on the signal', r => r.truth.honouredCancel, t.honouredCancel);
  row('handlers finished after their exchange closed', r => r.truth.completedAfterAbort, t.completedAfterAbort);
  row('publishes (on replicas holding a listen stream)', r => r.truth.publishes, '');
  row('  deliveries owed (publishes x listen streams)', r => r.truth.deliveriesOwed, t.deliveriesOwed);
  console.log('forkwatch, server side (role in brackets; the rest are loss / doubling signals)');
  for (const series of SERVER_SERIES) {
    const tag = series.role === 'loss' ? '' : ` [${series.role}]`;
    row(`  ${series.id}${tag}`, r => r.signals[series.id], t.serverSignals[series.id]);
  }
  console.log(
    `\nclients: ${s.clients.length} processes, forkwatch preloaded; calls ${t.callsMade}, results ${t.resultsReceived}, ` +
      `cancelled on purpose ${t.cancels}, errors ${t.clientErrors}, notifications ${t.notificationsReceived} of ` +
      `${t.deliveriesOwed} owed (listen streams on ${s.holders.join(', ') || 'none'})`,
  );
  console.log('forkwatch, client side (all clients)');
  for (const series of CLIENT_SERIES) {
    const tag = series.role === 'loss' ? '' : ` [${series.role}]`;
    console.log(`${`  ${series.id}${tag}`.padEnd(w)}${cell(t.clientSignals[series.id])}`);
  }
  for (const c of s.clients) for (const e of c.truth.errors) console.log(`  ${c.name} error: ${e.split('\n')[0]}`);
  console.log(
    `\nground-truth loss ${s.groundTruthLoss}; loss signals ${s.lossSignals}; closes the HTTP layer does not explain ` +
      `${s.unexplainedCloses}; false alarms ${s.falseAlarms ?? 'n/a (the ground truth shows loss)'}` +
      (s.falseAlarmsPer10k === undefined ? '' : ` (${s.falseAlarmsPer10k.toFixed(2)} per 10,000 exchanges)`),
  );
}
