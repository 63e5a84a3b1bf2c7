#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The boundary lab: replays that cross a session boundary (a shared store with the SDK's `_GET_stream` key, on one
// process and across replicas on Redis) or a stream boundary (per-replica integer ids colliding), and their healthy
// controls. Real SDK server processes with forkwatch (the servers alone: the clients here are plain SDK clients),
// the fork lab's cutting proxy, Debian's redis-server on a free port, all on 127.0.0.1 and stopped by PID.
// Scored against ground truth the apps keep: notifications carry the session that emitted them.
//
//   node lab/boundary/run.mjs                     every scenario
//   node lab/boundary/run.mjs --scenario colliding-ids --json
//   node lab/boundary/run.mjs --server-sdk v2     the servers on @modelcontextprotocol/server 2.x
import { startServer } from '../harness.mjs';
import { startProxy } from '../proxy.mjs';
import { startRedis } from './redis.mjs';
import { BOUNDARY_SCENARIOS } from './scenarios.mjs';
import { WORKLOADS } from './workloads.mjs';

export { BOUNDARY_SCENARIOS };

/** Resume outcomes of the boundary signals, as forkwatch's servers count them. */
export const BOUNDARY_OUTCOMES = ['cross_session', 'completed_stream'];

export function sumMetric(text, name, labels = {}) {
  let total = 0;
  for (const line of String(text).split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(' ').pop());
  }
  return total;
}

/**
 * Runs one scenario; returns { name, story, truth, servers: { A: { metrics, spans }, ... }, signals, verdict }.
 * options: serverSdk 'v1' | 'v2', moduleSystem 'cjs' | 'esm' (servers), serverInstrumentation.
 */
export async function runBoundaryScenario(name, options = {}) {
  const scenario = BOUNDARY_SCENARIOS[name];
  if (!scenario) throw new Error(`unknown boundary scenario ${name}`);
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { LoggingMessageNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const sdk = { Client, StreamableHTTPClientTransport, LoggingMessageNotificationSchema };
  let redis;
  const servers = {};
  const proxies = {};
  try {
    if (scenario.redis) redis = await startRedis();
    for (const [replica, config] of Object.entries(scenario.replicas)) {
      const store = config.store?.shared === 'redis' ? { ...config.store, redisPort: redis.port } : config.store;
      servers[replica] = await startServer(
        {
          name: replica,
          ...config,
          store,
          ...(options.serverSdk ? { sdk: options.serverSdk } : {}),
          ...(options.serverInstrumentation ? { instrumentation: options.serverInstrumentation } : {}),
        },
        { moduleSystem: options.moduleSystem ?? 'cjs' },
      );
    }
    const upstreams = Object.fromEntries(Object.entries(servers).map(([k, s]) => [k, s.url]));
    upstreams.B ??= upstreams.A;
    for (const via of new Set(scenario.sessions.map(s => s.via))) {
      proxies[via] = await startProxy(upstreams, { post: via, get: via, resume: via });
    }
    const truth = await WORKLOADS[scenario.workload]({ sdk, scenario, proxies });
    const reports = {};
    for (const [replica, server] of Object.entries(servers)) {
      const { metrics, spans } = await server.telemetry();
      reports[replica] = { metrics, spans };
    }
    const signals = {};
    for (const outcome of BOUNDARY_OUTCOMES) {
      signals[outcome] = Object.values(reports).reduce(
        (n, r) => n + sumMetric(r.metrics, 'forkwatch_server_resumes_total', { outcome }),
        0,
      );
    }
    const raised = BOUNDARY_OUTCOMES.filter(o => signals[o] > 0);
    const crossed = truth.foreignReceived > 0;
    const verdict = crossed
      ? raised.includes(scenario.crosses)
        ? 'caught'
        : scenario.knownMiss
          ? 'missed (documented)'
          : 'missed'
      : raised.length > 0
        ? 'false alarm'
        : 'silent';
    return { name, story: scenario.story, truth, servers: reports, signals, verdict };
  } finally {
    for (const proxy of Object.values(proxies)) await proxy.close();
    for (const server of Object.values(servers)) server.stop();
    await redis?.stop();
  }
}

async function main() {
  const args = process.argv.slice(2);
  const option = name => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const names = option('--scenario') ? [option('--scenario')] : Object.keys(BOUNDARY_SCENARIOS);
  const repeat = Number(option('--repeat') ?? 1);
  const results = [];
  for (let round = 0; round < repeat; round++) {
    for (const name of names) {
      const r = await runBoundaryScenario(name, { serverSdk: option('--server-sdk') });
      results.push(r);
      if (args.includes('--json')) continue;
      const t = r.truth;
      console.log(`━━ ${name}: ${r.story}`);
      console.log(
        `  ground truth   ${t.foreignReceived} events of another ${t.foreignKind} received, ${t.lost} own events lost`,
      );
      console.log(
        `  servers say    ${BOUNDARY_OUTCOMES.map(o => `${o} ×${r.signals[o]}`).join(', ')}  →  ${r.verdict}\n`,
      );
    }
  }
  if (args.includes('--json')) {
    await new Promise(resolve => process.stdout.write(JSON.stringify(results, null, 2), resolve));
  } else {
    // Per scenario: runs, runs that crossed (ground truth), caught, false alarms.
    console.log('scenario'.padEnd(30), 'runs', 'crossed', 'caught', 'false alarms');
    for (const name of names) {
      const rs = results.filter(r => r.name === name);
      const crossed = rs.filter(r => r.truth.foreignReceived > 0).length;
      const caught = rs.filter(r => r.verdict === 'caught').length;
      const alarms = rs.filter(r => r.verdict === 'false alarm').length;
      console.log(
        name.padEnd(30),
        String(rs.length).padStart(4),
        String(crossed).padStart(7),
        String(caught).padStart(6),
        String(alarms).padStart(12),
      );
    }
  }
  const bad = results.filter(r => r.verdict === 'missed' || r.verdict === 'false alarm');
  process.exit(bad.length ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
