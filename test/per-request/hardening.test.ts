/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The per-request patches are guests: a failing observer never reaches the SDK or the app, the patches come off
 * cleanly, and a disabled instrumentation passes everything through.
 */
import { isWrapped } from '@opentelemetry/instrumentation';
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { connectClient, serverSdk, startCutter, startReplica, until, useTestResources } from './support';

const t = useTestResources();

const patched = () => [
  serverSdk.PerRequestHTTPServerTransport.prototype.handleMessage,
  serverSdk.PerRequestHTTPServerTransport.prototype.close,
  serverSdk.PerRequestHTTPServerTransport.prototype.send,
  serverSdk.Server.prototype._wrapHandler,
  serverSdk.McpServer.prototype.registerTool,
  serverSdk.InMemoryServerEventBus.prototype.publish,
];

test('an observer that throws everywhere changes nothing for the app: calls, cuts, listens and publishes work', async () => {
  t.fw = setupForkwatch({}, serverSdk);
  const errors: unknown[] = [];
  // The private instruments every patch records through, and the diag logger it reports its failures to.
  const instrumentation = t.fw.instrumentation as unknown as {
    _instruments: object;
    _diag: Record<'error' | 'warn' | 'debug' | 'info', (...args: unknown[]) => void>;
  };
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
  t.cleanups.push(() => replica.close());
  const cutter = await startCutter(replica.url);
  t.cleanups.push(() => cutter.close());
  const client = await connectClient(cutter.url);
  t.cleanups.push(() => client.close().catch(() => {}));
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
  t.fw = setupForkwatch({}, serverSdk);
  expect(patched().every(m => isWrapped(m))).toBe(true);
  t.fw.instrumentation.disable();
  expect(patched().some(m => isWrapped(m))).toBe(false);
  t.fw.instrumentation.enable();
  t.fw.instrumentation.manuallyInstrument(serverSdk);
  expect(patched().every(m => isWrapped(m))).toBe(true);
  const replica = await startReplica();
  t.cleanups.push(() => replica.close());
  const client = await connectClient(replica.url);
  t.cleanups.push(() => client.close().catch(() => {}));
  await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'on' } });
  await until(
    async () =>
      (sampleOne(await t.fw!.metrics(), METRICS.serverExchanges.prometheusName, { outcome: 'delivered' }) ?? 0) >= 2,
    'the delivered exchanges',
  );
  const before = sampleOne(await t.fw.metrics(), METRICS.serverExchanges.prometheusName, { outcome: 'delivered' });
  t.fw.instrumentation.disable();
  await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'off' } });
  expect(sampleOne(await t.fw.metrics(), METRICS.serverExchanges.prometheusName, { outcome: 'delivered' })).toBe(
    before,
  );
});
