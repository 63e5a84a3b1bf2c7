/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Recall and false alarms per scenario, on the real 2.x packages at 2026-07-28: each scenario runs RUNS times, each
 * run's signals are the metric deltas it caused, checked against the run's ground truth (the tools' own counts,
 * what the client received). Lossy scenarios must raise their signal every time (recall); every run of every
 * scenario must leave the other loss signals alone (false alarms). The table goes to stderr for the closing note.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { connectClient, rawRequest, serverSdk, sleep, startCutter, startReplica, until } from './support';

const RUNS = 10;
const WINDOW_MS = 400;

/** The loss and doubling signals: a healthy run moves none of them. */
const LOSS_SIGNALS: Record<string, [string, Record<string, string>]> = {
  late_result: [METRICS.serverLateMessages.prometheusName, { kind: 'result' }],
  late_error: [METRICS.serverLateMessages.prometheusName, { kind: 'error' }],
  late_notification: [METRICS.serverLateMessages.prometheusName, { kind: 'notification' }],
  duplicate_risk: [METRICS.serverProbableReissues.prometheusName, { idempotency: 'not_idempotent' }],
  no_listener: [METRICS.serverListenPublishes.prometheusName, { outcome: 'no_listener' }],
  orphaned_task: [METRICS.serverOrphanedTasks.prometheusName, {}],
  client_broken: [METRICS.clientExchanges.prometheusName, { outcome: 'broken' }],
  client_ended_early: [METRICS.clientExchanges.prometheusName, { outcome: 'ended_early' }],
  client_not_reissued: [METRICS.clientReissues.prometheusName, { outcome: 'not_reissued' }],
  client_reissued: [METRICS.clientReissues.prometheusName, { outcome: 'reissued' }],
  listen_dropped: [METRICS.clientListenStreams.prometheusName, { outcome: 'dropped' }],
  listen_gap: [`${METRICS.clientListenGapSeconds.prometheusName}_count`, {}],
};
type Signal = keyof typeof LOSS_SIGNALS;

let fw: Forkwatch;
const rows: string[] = [];

async function snapshot(): Promise<Record<Signal, number>> {
  const m = await fw.metrics();
  return Object.fromEntries(
    Object.entries(LOSS_SIGNALS).map(([k, [name, labels]]) => [k, sampleOne(m, name, labels) ?? 0]),
  ) as Record<Signal, number>;
}

interface Scenario {
  name: string;
  /** The signals this scenario must raise, with the count per run its ground truth says. */
  expected: Partial<Record<Signal, number>>;
  /** Plays one run; returns whether the run's ground truth held (the loss or doubling really happened, or not). */
  run(): Promise<boolean>;
}

async function measure(scenario: Scenario) {
  let hits = 0;
  let falseAlarms = 0;
  let truthHeld = 0;
  for (let i = 0; i < RUNS; i++) {
    const before = await snapshot();
    if (await scenario.run()) truthHeld++;
    // Let late completions and the re-issue window settle, then take the run's deltas.
    const expected = Object.entries(scenario.expected) as [Signal, number][];
    await until(async () => {
      const now = await snapshot();
      return expected.every(([k, n]) => (now[k] ?? 0) - (before[k] ?? 0) >= n);
    }, `${scenario.name}: its signals`).catch(() => undefined);
    await sleep(WINDOW_MS + 50);
    const after = await snapshot();
    const delta = (k: Signal) => (after[k] ?? 0) - (before[k] ?? 0);
    if (expected.every(([k, n]) => delta(k) === n)) hits++;
    const stray = (Object.keys(LOSS_SIGNALS) as Signal[]).filter(k => !(k in scenario.expected) && delta(k) !== 0);
    if (stray.length > 0) falseAlarms++;
  }
  const lossy = Object.keys(scenario.expected).length > 0;
  rows.push(
    `| ${scenario.name} | ${lossy ? Object.keys(scenario.expected).join(', ') : '(none)'} | ` +
      `${lossy ? `${hits}/${RUNS}` : '—'} | ${falseAlarms}/${RUNS} | ${truthHeld}/${RUNS} |`,
  );
  return { hits, falseAlarms, truthHeld };
}

afterAll(async () => {
  process.stderr.write(
    `\n| scenario (${RUNS} runs each) | signals expected | recall | false alarms | ground truth held |\n|---|---|---|---|---|\n${rows.join('\n')}\n`,
  );
  await fw?.teardown();
});

describe('recall and false alarms per scenario', () => {
  test('every scenario', async () => {
    fw = setupForkwatch({ perRequest: { reissueWindowMs: WINDOW_MS } }, serverSdk);
    const a = await startReplica();
    const b = await startReplica();
    const cutter = await startCutter(a.url);
    const client = await connectClient(cutter.url);
    const direct = await connectClient(a.url);
    let received = 0;
    direct.setNotificationHandler('notifications/tools/list_changed', () => {
      received++;
    });
    const viaCutter = await connectClient(cutter.url);
    let receivedCut = 0;
    viaCutter.setNotificationHandler('notifications/tools/list_changed', () => {
      receivedCut++;
    });
    let key = 0;
    const startedCut = async (name: string, args: object, c = client) => {
      const before = a.truth.executions[name] ?? 0;
      const call = c.callTool({ name, arguments: args }).then(
        () => true,
        () => false,
      );
      await until(() => (a.truth.executions[name] ?? 0) > before, `${name} to start`);
      cutter.cut();
      return call;
    };
    const scenarios: Scenario[] = [
      {
        name: 'stream cut mid-call, not re-issued',
        expected: { late_result: 1, client_broken: 1, client_not_reissued: 1 },
        run: async () => {
          const done = a.truth.completedAfterAbort;
          const ok = await startedCut('write_record', { ms: 60, key: `n${key++}` });
          await until(() => a.truth.completedAfterAbort === done + 1, 'the late completion');
          return !ok;
        },
      },
      {
        name: 'stream cut mid-call, re-issued',
        expected: { late_result: 1, client_broken: 1, client_reissued: 1, duplicate_risk: 1 },
        run: async () => {
          const args = { ms: 60, key: `r${key++}` };
          const before = a.truth.executions.write_record ?? 0;
          await startedCut('write_record', args);
          await sleep(80);
          await client.callTool({ name: 'write_record', arguments: args });
          return (a.truth.executions.write_record ?? 0) - before === 2; // executed twice
        },
      },
      {
        name: 'slow handler finishing after the client left (client timeout)',
        expected: { late_result: 1 },
        run: async () => {
          const done = a.truth.completedAfterAbort;
          const ok = await client
            .callTool({ name: 'write_record', arguments: { ms: 400, key: `t${key++}` } }, { timeout: 120 })
            .then(
              () => true,
              () => false,
            );
          await until(() => a.truth.completedAfterAbort === done + 1, 'the late completion');
          return !ok;
        },
      },
      {
        name: 'second replica publishing to a listen stream held by the first',
        expected: { no_listener: 1 },
        run: async () => {
          const sub = await direct.listen({ toolsListChanged: true });
          const before = received;
          b.handler.notify.toolsChanged();
          await sleep(30);
          const lost = received === before;
          await sub.close();
          return lost;
        },
      },
      {
        name: 'listen stream dropped while notifications are published',
        expected: { no_listener: 1, listen_dropped: 1, listen_gap: 1 },
        run: async () => {
          const sub = await viaCutter.listen({ toolsListChanged: true });
          cutter.cut();
          await sub.closed;
          await until(() => (a.handler.bus as { listenerCount: number }).listenerCount === 0, 'the teardown');
          const before = receivedCut;
          a.handler.notify.toolsChanged();
          await sleep(20);
          const again = await viaCutter.listen({ toolsListChanged: true });
          const lost = receivedCut === before;
          await again.close();
          return lost;
        },
      },
      {
        name: 'task whose creating response is cut',
        expected: { orphaned_task: 1, late_result: 1, client_broken: 1, client_not_reissued: 1 },
        run: async () => {
          const created = a.truth.tasksCreated.length;
          const ok = await startedCut('start_task', { ms: 60 });
          await until(() => a.truth.tasksCreated.length === created + 1 && a.truth.completedAfterAbort > 0, 'task');
          return !ok;
        },
      },
      {
        name: 'healthy: completed call',
        expected: {},
        run: async () => {
          const r = await client.callTool({ name: 'write_record', arguments: { ms: 1, key: `h${key++}` } });
          return r.content[0].text.startsWith('wrote');
        },
      },
      {
        name: 'healthy: MRTR retry',
        expected: {},
        run: async () => {
          const before = a.truth.executions.confirm_action ?? 0;
          await client.callTool({ name: 'confirm_action', arguments: { key: `m${key++}` } });
          return (a.truth.executions.confirm_action ?? 0) - before === 2;
        },
      },
      {
        name: 'healthy: idempotent tool re-issued after a cut (no duplicate-execution risk)',
        expected: { late_result: 1, client_broken: 1, client_reissued: 1 },
        run: async () => {
          const args = { ms: 60, key: `i${key++}` };
          await startedCut('read_record', args);
          await sleep(80);
          await client.callTool({ name: 'read_record', arguments: args });
          return true;
        },
      },
      {
        name: 'healthy: client cancelling on purpose (handler honours it)',
        expected: {},
        run: async () => {
          const stopped = a.truth.honouredCancel;
          const controller = new AbortController();
          const before = a.truth.executions.cooperative_job ?? 0;
          const call = client
            .callTool({ name: 'cooperative_job', arguments: { ms: 5_000 } }, { signal: controller.signal })
            .catch(() => 'cancelled');
          await until(() => (a.truth.executions.cooperative_job ?? 0) > before, 'the job to start');
          controller.abort();
          await call;
          await until(() => a.truth.honouredCancel === stopped + 1, 'the job to stop');
          return true;
        },
      },
      {
        name: 'healthy: tasks/get of a task created here',
        expected: {},
        run: async () => {
          await client.callTool({ name: 'start_task', arguments: { ms: 1 } });
          const taskId = a.truth.tasksCreated.at(-1)!;
          const got = await rawRequest(a.url, 1, 'tasks/get', { taskId }, taskId);
          return got.body?.result?.taskId === taskId;
        },
      },
    ];
    const results = [];
    for (const scenario of scenarios) results.push({ scenario, ...(await measure(scenario)) });
    for (const { scenario, hits, falseAlarms, truthHeld } of results) {
      expect(truthHeld, `${scenario.name}: ground truth`).toBe(RUNS);
      if (Object.keys(scenario.expected).length > 0) expect(hits, `${scenario.name}: recall`).toBe(RUNS);
      expect(falseAlarms, `${scenario.name}: false alarms`).toBe(0);
    }
    await Promise.all([client, direct, viaCutter].map(c => c.close().catch(() => {})));
    await cutter.close();
    await a.close();
    await b.close();
  }, 300_000);
});
