/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The per-request patches are guests: a failing observer never reaches the SDK or the app, the patches come off
 * cleanly, and a disabled instrumentation passes everything through.
 */
import { isWrapped } from '@opentelemetry/instrumentation';
import { afterEach, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { connectClient, serverSdk, startCutter, startReplica, until } from './support';

let fw: Forkwatch | undefined;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await fw?.teardown();
  fw = undefined;
});

const patched = () => [
  serverSdk.PerRequestHTTPServerTransport.prototype.handleMessage,
  serverSdk.PerRequestHTTPServerTransport.prototype.close,
  serverSdk.PerRequestHTTPServerTransport.prototype.send,
  serverSdk.Server.prototype._wrapHandler,
  serverSdk.McpServer.prototype.registerTool,
  serverSdk.InMemoryServerEventBus.prototype.publish,
];

test('an observer that throws everywhere changes nothing for the app: calls, cuts, listens and publishes work', async () => {
  fw = setupForkwatch({}, serverSdk);
  const errors: unknown[] = [];
  const instrumentation = fw.instrumentation as any;
  // Every instrument throws: each patch must catch it.
  instrumentation._instruments = new Proxy(
    {},
    {
      get() {
        throw new Error('instrument exploded');
      },
    },
  );
  instrumentation._diag = { error: (...args: unknown[]) => errors.push(args), warn() {}, debug() {}, info() {} };
  const replica = await startReplica();
  cleanups.push(() => replica.close());
  const cutter = await startCutter(replica.url);
  cleanups.push(() => cutter.close());
  const client = await connectClient(cutter.url);
  cleanups.push(() => client.close().catch(() => {}));
  const result = await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'k' } });
  expect(result.content[0].text).toBe('wrote k');
  const call = client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'c' } }).catch(() => 'lost');
  await until(() => replica.truth.executions.write_record === 2, 'the call to start');
  cutter.cut();
  expect(await call).toBe('lost');
  await until(() => replica.truth.completedAfterAbort === 1, 'the late completion');
  const sub = await client.listen({ toolsListChanged: true });
  replica.handler.notify.toolsChanged();
  await sub.close();
  expect(errors.length).toBeGreaterThan(0); // the failures were reported, not thrown
});

test('patches come off cleanly on disable, and a disabled instrumentation records nothing', async () => {
  fw = setupForkwatch({}, serverSdk);
  expect(patched().every(m => isWrapped(m))).toBe(true);
  fw.instrumentation.disable();
  expect(patched().some(m => isWrapped(m))).toBe(false);
  fw.instrumentation.enable();
  fw.instrumentation.manuallyInstrument(serverSdk);
  expect(patched().every(m => isWrapped(m))).toBe(true);
  const replica = await startReplica();
  cleanups.push(() => replica.close());
  const client = await connectClient(replica.url);
  cleanups.push(() => client.close().catch(() => {}));
  await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'on' } });
  await until(
    async () =>
      (sampleOne(await fw!.metrics(), METRICS.serverExchanges.prometheusName, { outcome: 'delivered' }) ?? 0) >= 2,
    'the delivered exchanges',
  );
  const before = sampleOne(await fw.metrics(), METRICS.serverExchanges.prometheusName, { outcome: 'delivered' });
  fw.instrumentation.disable();
  await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'off' } });
  expect(sampleOne(await fw.metrics(), METRICS.serverExchanges.prometheusName, { outcome: 'delivered' })).toBe(before);
});
