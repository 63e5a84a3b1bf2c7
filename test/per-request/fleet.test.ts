/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The per-request fleet at CI size (docs/fleet.md has the full-size run): three 2.x replica processes at protocol
 * 2026-07-28, each with forkwatch/register, behind Debian's HAProxy round-robin (deploy/haproxy/haproxy.cfg), and
 * client processes with forkwatch/register sending healthy traffic through it. No loss or doubling signal may move
 * on any replica or client. Then the lossy control on the same replicas: a call aborted mid-stream counts on the
 * replica that served it through the reference deployment, HAProxy (its `option abortonclose` passes the close on)
 * and nginx (`proxy_ignore_client_abort off`, buffered or not), and on none behind HAProxy without that option,
 * which keeps the server side open until the answer (what forkwatch on the server cannot see).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { METRICS, type MetricKey, labelCombinations } from '../../src/shared/names';
// @ts-expect-error: plain ESM module without types
import * as lab from '../../lab/per-request-fleet/fleet.mjs';
// @ts-expect-error: plain ESM module without types
import { scoreRun } from '../../lab/per-request-fleet/score.mjs';
// @ts-expect-error: plain ESM module without types
import { trackChild } from '../../lab/fleet/children.mjs';
// @ts-expect-error: plain ESM module without types
import { startNginx } from '../../lab/fleet/real-parts.mjs';
import { sampleOne } from '../support/scrape';

const { runClients, scrapeReplicas, settle, startFront, startPerRequestFleet, truthOfReplicas } = lab;

interface ReplicaTruth {
  executions: Record<string, number>;
  honouredCancel: number;
  completedAfterAbort: number;
  deliveriesOwed: number;
  http: { received: Record<string, number>; finished: Record<string, number>; closedEarly: Record<string, number> };
}
interface ClientRun {
  name: string;
  metrics: string;
  truth: {
    calls: Record<string, number>;
    results: Record<string, number>;
    cancels: number;
    errors: string[];
    notifications: number;
    abortedBy?: string;
  };
}
interface Front {
  url: string;
  stop(): Promise<void>;
}
interface Fleet extends Front {
  replicas: { name: string; address: string }[];
}
type Snapshot = Record<string, { metrics: string; truth: ReplicaTruth }>;

/** Every series of a family, as [prometheus name, labels]; a histogram by its `_count`. */
function series(key: MetricKey, only: Record<string, string> = {}): [string, Record<string, string>][] {
  const spec = METRICS[key];
  const name = spec.kind === 'histogram' ? `${spec.prometheusName}_count` : spec.prometheusName;
  return labelCombinations(spec)
    .filter(labels => Object.entries(only).every(([k, v]) => labels[k] === v))
    .map(labels => [name, labels]);
}
/** The loss and doubling signals of protocol 2026-07-28: 0 on healthy traffic. */
const SERVER_LOSS = [
  ...series('serverExchanges', { outcome: 'closed_mid_stream' }),
  ...series('serverLateMessages'),
  ...series('serverProbableReissues'),
  ...series('serverListenPublishes', { outcome: 'no_listener' }),
  ...series('serverOrphanedTasks'),
  ...series('serverTaskMisses'),
];
const CLIENT_LOSS = [
  ...['ended_early', 'broken', 'failed'].flatMap(outcome => series('clientExchanges', { outcome })),
  ...series('clientReissues'),
  ...series('clientReissueDelaySeconds'),
  ...series('clientListenStreams', { outcome: 'dropped' }),
  ...series('clientListenGapSeconds'),
];
const value = (text: string, name: string, labels: Record<string, string>) => sampleOne(text, name, labels) ?? 0;
const exchanges = METRICS.serverExchanges.prometheusName;
const late = METRICS.serverLateMessages.prometheusName;
const clientExchanges = METRICS.clientExchanges.prometheusName;

let fleet: Fleet | undefined;
let hidingFront: Front | undefined;
const nginxFronts: Record<'unbuffered' | 'buffered', Front | undefined> = {
  unbuffered: undefined,
  buffered: undefined,
};
const names = () => fleet!.replicas.map(r => r.name);
async function snapshot(): Promise<Snapshot> {
  const [metrics, truths] = await Promise.all([scrapeReplicas(fleet), truthOfReplicas(fleet)]);
  return Object.fromEntries(names().map(n => [n, { metrics: metrics[n], truth: truths[n] }]));
}
const delta = (before: Snapshot, after: Snapshot, replica: string, name: string, labels: Record<string, string>) =>
  value(after[replica]!.metrics, name, labels) - value(before[replica]!.metrics, name, labels);
const grew = (before: Snapshot, after: Snapshot, replica: string, pick: (t: ReplicaTruth) => number | undefined) =>
  (pick(after[replica]!.truth) ?? 0) - (pick(before[replica]!.truth) ?? 0);

/** deploy/nginx/nginx.conf round-robin over the fleet's replicas (buffered: the control that buffers SSE). */
async function nginxFront(replicas: Fleet['replicas'], buffered: boolean): Promise<Front> {
  const servers = { s1: replicas[0]!.address, s2: replicas[1]!.address, s3: replicas[2]!.address };
  const nginx = await startNginx({ servers, balance: 'round-robin', track: trackChild, buffered });
  return { url: `${nginx.url}/mcp`, stop: nginx.stop };
}

beforeAll(async () => {
  const started: Fleet = await startPerRequestFleet({ replicas: 3 });
  fleet = started;
  // The same replicas behind the controls.
  hidingFront = await startFront(started.replicas, { abortOnClose: false });
  nginxFronts.unbuffered = await nginxFront(started.replicas, false);
  nginxFronts.buffered = await nginxFront(started.replicas, true);
});
afterAll(async () => {
  await hidingFront?.stop();
  await nginxFronts.unbuffered?.stop();
  await nginxFronts.buffered?.stop();
  await fleet?.stop();
});

/** One client that aborts a slow_report call once its SSE response started; returns the run and the snapshots. */
async function abortMidStream(front: Front) {
  const before = await snapshot();
  const run: { clients: ClientRun[] } = await runClients({ ...fleet, url: front.url }, [
    { name: 'lossy', mode: 'abort-mid-stream', listen: false },
  ]);
  await settle(fleet); // the handler ignores the signal and finishes 1.5 s later
  const after = await snapshot();
  const served = names().filter(n => grew(before, after, n, t => t.executions.slow_report) === 1);
  expect(served).toHaveLength(1);
  const client = run.clients[0]!;
  // The client aborted on purpose, on the log line (its SSE response had started): `cancelled`, never `broken`.
  expect(client.truth.abortedBy).toBe('log line');
  expect(client.truth.cancels).toBe(1);
  expect(value(client.metrics, clientExchanges, { outcome: 'cancelled' })).toBe(1);
  expect(value(client.metrics, clientExchanges, { outcome: 'broken' })).toBe(0);
  return { before, after, served: served[0]! };
}

describe('protocol 2026-07-28 behind HAProxy round-robin, CI size', () => {
  test('healthy traffic from 4 client processes reaches several replicas, and no loss or doubling signal moves on any', async () => {
    const before = await snapshot();
    const configs = Array.from({ length: 4 }, (_, i) => ({ name: `c${i + 1}`, rounds: 6, jobMs: 1_500 }));
    const run: { clients: ClientRun[]; publishes: number } = await runClients(fleet, configs);
    await settle(fleet);
    const after = await snapshot();
    const score = scoreRun({
      replicas: names().map(name => ({ name, before: before[name], after: after[name] })),
      clients: run.clients,
      publishes: run.publishes,
    });
    const t = score.totals;
    console.log(
      `per-request fleet: ${t.exchangesReceived} exchanges on ${score.replicasServing} replicas, ${t.cancels} cancels, ` +
        `${t.notificationsReceived}/${t.deliveriesOwed} notifications, loss signals ${score.lossSignals}`,
    ); // for the CI log

    // Ground truth: the traffic was healthy. Every call not cancelled on purpose got its result, every publish
    // reached the listen streams of its replica.
    for (const c of run.clients) {
      expect(c.truth.errors, c.name).toEqual([]);
      const calls = Object.values(c.truth.calls).reduce((a, b) => a + b, 0);
      const results = Object.values(c.truth.results).reduce((a, b) => a + b, 0);
      expect(results + c.truth.cancels, c.name).toBe(calls);
      expect(c.truth.cancels, c.name).toBe(3); // rounds 0, 2 and 4
      expect(c.truth.notifications, c.name).toBe(run.publishes);
    }
    expect(run.publishes).toBeGreaterThan(0);
    expect(score.totals.deliveriesOwed).toBe(4 * run.publishes);

    // Real traffic went through HAProxy to more than one replica, and forkwatch on each saw its share.
    const delivered = names().map(n => delta(before, after, n, exchanges, { outcome: 'delivered' }));
    expect(delivered.filter(d => d > 0).length).toBeGreaterThanOrEqual(2);
    const calls = names().map(n => grew(before, after, n, t => t.http.received['tools/call']));
    expect(calls.filter(c => c > 0).length).toBeGreaterThanOrEqual(2);
    // Every cancelled job reached a replica, and the reference config passed each cancel on: it stopped there.
    expect(names().reduce((n, r) => n + grew(before, after, r, t => t.executions.cooperative_job), 0)).toBe(12);
    expect(names().reduce((n, r) => n + grew(before, after, r, t => t.honouredCancel), 0)).toBe(12);

    for (const n of names()) {
      for (const [name, labels] of SERVER_LOSS) {
        expect(delta(before, after, n, name, labels), `${n} ${name} ${JSON.stringify(labels)}`).toBe(0);
      }
      // The 499s, if any, are cancellations the handler honoured, one for one with the exchanges the replica's HTTP
      // layer saw closed before their end; nothing finished for a client that had left.
      const closedEarly = grew(before, after, n, t => t.http.closedEarly['tools/call']);
      expect(delta(before, after, n, exchanges, { outcome: 'closed_before_response' }), n).toBe(closedEarly);
      expect(
        grew(before, after, n, t => t.honouredCancel),
        n,
      ).toBe(closedEarly);
      expect(
        grew(before, after, n, t => t.completedAfterAbort),
        n,
      ).toBe(0);
    }

    for (const c of run.clients) {
      for (const [name, labels] of CLIENT_LOSS) {
        expect(value(c.metrics, name, labels), `${c.name} ${name} ${JSON.stringify(labels)}`).toBe(0);
      }
      expect(value(c.metrics, clientExchanges, { outcome: 'cancelled' }), c.name).toBe(3);
      // server/discover, then 6 rounds of a write, two MRTR rounds and two reads.
      expect(value(c.metrics, clientExchanges, { outcome: 'completed' }), c.name).toBe(1 + 6 * 5);
      expect(value(c.metrics, METRICS.clientListenStreams.prometheusName, { outcome: 'cancelled' }), c.name).toBe(1);
    }
    expect(score.falseAlarms).toBe(0);
  });

  test.each([
    ['HAProxy, the reference config (option abortonclose)', () => fleet!],
    ['nginx, the reference config (proxy_buffering off)', () => nginxFronts.unbuffered!],
    ['nginx buffering the response (proxy_buffering on)', () => nginxFronts.buffered!],
  ])('lossy control through %s: the abort counts on the replica that served the call', async (_, front) => {
    const { before, after, served } = await abortMidStream(front());
    expect(grew(before, after, served, t => t.completedAfterAbort)).toBe(1); // ground truth: that result was lost
    expect(delta(before, after, served, exchanges, { outcome: 'closed_mid_stream' })).toBe(1);
    // Not `delivered`: the replica's HTTP layer saw it closed early, and only what it answered in full counts so.
    expect(grew(before, after, served, t => t.http.closedEarly['tools/call'])).toBe(1);
    const answered = grew(before, after, served, t => Object.values(t.http.finished).reduce((a, b) => a + b, 0));
    expect(delta(before, after, served, exchanges, { outcome: 'delivered' })).toBe(answered);
    expect(delta(before, after, served, late, { kind: 'result' })).toBe(1);
    for (const n of names().filter(x => x !== served)) {
      expect(delta(before, after, n, exchanges, { outcome: 'closed_mid_stream' }), n).toBe(0);
      expect(delta(before, after, n, late, { kind: 'result' }), n).toBe(0);
    }
  });

  test('behind HAProxy without abortonclose the same abort shows on no replica: it keeps the server side open', async () => {
    const { before, after, served } = await abortMidStream(hidingFront!);
    // The handler's signal never fired and its answer was written in full, to HAProxy: `delivered`.
    expect(grew(before, after, served, t => t.completedAfterAbort)).toBe(0);
    expect(grew(before, after, served, t => t.http.finished['tools/call'])).toBe(1);
    const answered = grew(
      before,
      after,
      served,
      t => (t.http.finished['tools/call'] ?? 0) + (t.http.finished['server/discover'] ?? 0),
    );
    expect(delta(before, after, served, exchanges, { outcome: 'delivered' })).toBe(answered);
    for (const n of names()) {
      expect(delta(before, after, n, exchanges, { outcome: 'closed_mid_stream' }), n).toBe(0);
      expect(delta(before, after, n, late, { kind: 'result' }), n).toBe(0);
    }
  });
});
