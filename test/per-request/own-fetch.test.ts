/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A 2.x client given its own `fetch` (a proxy agent, an auth wrapper, undici's fetch) sends its 2026-07-28 POSTs past
 * `globalThis.fetch`: the class patch observes that fetch instead, and a fetch of the app's that calls the global
 * one is still observed once. The real 2.x client and server, a real TCP cut (test/per-request/support.ts).
 */
import { expect, test } from 'vitest';
import { heldClaims } from '../../src/client/observer/patched-transport-scope';
import { METRICS, type MetricKey, labelCombinations } from '../../src/shared/names';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import {
  type Cutter,
  type LabClient,
  type Replica,
  clientSdk,
  connectClient,
  serverSdk,
  startCutter,
  startReplica,
  until,
  useTestResources,
} from './support';

/** The process's fetch before forkwatch wraps it: what an app's own fetch reaches without the global observer. */
const unobservedFetch = globalThis.fetch;

const t = useTestResources();

async function lab(fetch: typeof globalThis.fetch) {
  t.fw = setupForkwatch({ perRequest: { reissueWindowMs: 300 } }, serverSdk, clientSdk);
  const replica = await startReplica();
  t.cleanups.push(() => replica.close());
  const cutter = await startCutter(replica.url);
  t.cleanups.push(() => cutter.close());
  const client = await connectClient(cutter.url, { fetch });
  t.cleanups.push(() => client.close().catch(() => {}));
  return { replica, cutter, client };
}

const metric = async (name: string, labels: Record<string, string> = {}) =>
  sampleOne(await t.fw!.metrics(), name, labels) ?? 0;

async function cutOneCall(replica: Replica, cutter: Cutter, client: LabClient) {
  await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'ok' } });
  const call = client.callTool({ name: 'write_record', arguments: { ms: 200, key: 'cut' } }).catch(() => 'lost');
  await until(() => replica.truth.executions.write_record === 2, 'the call to start');
  cutter.cut();
  expect(await call).toBe('lost');
}

test("a fetch of the app's own that never reaches the global one: the cut call is broken on the client", async () => {
  const calls: string[] = [];
  const own: typeof globalThis.fetch = (input, init) => {
    calls.push(String(init?.method));
    return unobservedFetch(input, init);
  };
  expect(own).not.toBe(globalThis.fetch);
  const { replica, cutter, client } = await lab(own);
  await cutOneCall(replica, cutter, client);
  expect(calls.filter(m => m === 'POST').length).toBeGreaterThanOrEqual(2);
  await until(
    async () => (await metric(METRICS.clientExchanges.prometheusName, { outcome: 'broken' })) === 1,
    'the broken exchange',
  );
  expect(await metric(METRICS.clientExchanges.prometheusName, { outcome: 'completed' })).toBeGreaterThanOrEqual(1);
  await until(
    async () => (await metric(METRICS.clientReissues.prometheusName, { outcome: 'not_reissued' })) === 1,
    'the window',
  );
  expect(heldClaims()).toBe(0);
});

test("a fetch of the app's own that calls the global one after an await: every exchange is counted once", async () => {
  const own: typeof globalThis.fetch = async (input, init) => {
    await new Promise(r => setImmediate(r));
    return globalThis.fetch(input, { ...init });
  };
  const { replica, cutter, client } = await lab(own);
  const completedBefore = await metric(METRICS.clientExchanges.prometheusName, { outcome: 'completed' });
  await cutOneCall(replica, cutter, client);
  await until(
    async () => (await metric(METRICS.clientExchanges.prometheusName, { outcome: 'broken' })) >= 1,
    'the broken exchange',
  );
  // Counted twice, the cut call would be 2 broken and the call before it 2 completed.
  expect(await metric(METRICS.clientExchanges.prometheusName, { outcome: 'broken' })).toBe(1);
  expect((await metric(METRICS.clientExchanges.prometheusName, { outcome: 'completed' })) - completedBefore).toBe(1);
  expect(heldClaims()).toBe(0);
});

test("healthy calls through a fetch of the app's own that calls the global one: completed, and no loss signal", async () => {
  const own: typeof globalThis.fetch = async (input, init) => {
    await new Promise(r => setImmediate(r));
    return globalThis.fetch(input, { ...init });
  };
  const { client } = await lab(own);
  for (let i = 0; i < 3; i++) await client.callTool({ name: 'write_record', arguments: { ms: 1, key: `k${i}` } });
  const text = await t.fw!.metrics();
  const healthy = new Set(['completed', 'delivered']);
  const keys: MetricKey[] = [
    'clientExchanges',
    'clientReissues',
    'serverExchanges',
    'serverLateMessages',
    'serverProbableReissues',
  ];
  for (const key of keys) {
    for (const labels of labelCombinations(METRICS[key])) {
      const value = sampleOne(text, METRICS[key].prometheusName, labels) ?? 0;
      if (healthy.has(labels.outcome ?? ''))
        expect(value, `${key} ${JSON.stringify(labels)}`).toBeGreaterThanOrEqual(3);
      else expect(value, `${key} ${JSON.stringify(labels)}`).toBe(0);
    }
  }
  expect(heldClaims()).toBe(0);
});
