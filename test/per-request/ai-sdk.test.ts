/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A client judged on the wire: @ai-sdk/mcp 2.0.99 (its HttpMCPTransport is not exported; it speaks 2026-07-28 by
 * default), against the real 2.x server through a real TCP cut. Its own tool-call retry does not cover a dropped
 * connection, so the app re-issues or the request is lost; forkwatch's fetch observer sees both.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { setupForkwatch, versionsDir } from '../server/support';
import { sampleOne } from '../support/lab';
import { serverSdk, sleep, startCutter, startReplica, until, useTestResources } from './support';

const t = useTestResources();

async function aiSdkLab(reissueWindowMs: number) {
  t.fw = setupForkwatch({ perRequest: { reissueWindowMs } }, serverSdk);
  const replica = await startReplica();
  t.cleanups.push(() => replica.close());
  const cutter = await startCutter(replica.url);
  t.cleanups.push(() => cutter.close());
  const appRequire = createRequire(join(versionsDir, 'ai-sdk-mcp/resolve-from.js'));
  const { createMCPClient } = await import(pathToFileURL(appRequire.resolve('@ai-sdk/mcp')).href);
  const client = await createMCPClient({ transport: { type: 'http', url: cutter.url } });
  t.cleanups.push(() => client.close().catch(() => {}));
  return { replica, cutter, client };
}

const metric = async (name: string, labels: Record<string, string> = {}) =>
  sampleOne(await t.fw!.metrics(), name, labels);

test('@ai-sdk/mcp, a call cut and not re-issued: broken and not_reissued on the client, the late result on the server', async () => {
  const { replica, cutter, client } = await aiSdkLab(300);
  await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'ok' } });
  const call = client.callTool({ name: 'write_record', arguments: { ms: 150, key: 'cut' } }).catch(() => 'lost');
  await until(() => replica.truth.executions.write_record === 2, 'the call to start');
  cutter.cut();
  expect(await call).toBe('lost');
  await until(
    async () => (await metric(METRICS.clientReissues.prometheusName, { outcome: 'not_reissued' })) === 1,
    'the window',
  );
  expect(replica.truth.executions.write_record).toBe(2); // ground truth: no automatic retry
  expect(await metric(METRICS.clientExchanges.prometheusName, { outcome: 'broken' })).toBe(1);
  expect(await metric(METRICS.clientExchanges.prometheusName, { outcome: 'completed' })).toBeGreaterThanOrEqual(2);
  await until(async () => (await metric(METRICS.serverLateMessages.prometheusName, { kind: 'result' })) === 1, 'late');
});

test('@ai-sdk/mcp, the app re-issues the cut call: reissued with its delay, and the duplicate-execution risk', async () => {
  const { replica, cutter, client } = await aiSdkLab(5_000);
  const call = client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'again' } }).catch(() => 'lost');
  await until(() => replica.truth.executions.write_record === 1, 'the call to start');
  cutter.cut();
  expect(await call).toBe('lost');
  await sleep(150);
  await client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'again' } });
  expect(replica.truth.executions.write_record).toBe(2);
  expect(await metric(METRICS.clientReissues.prometheusName, { outcome: 'reissued' })).toBe(1);
  expect(sampleOne(await t.fw!.metrics(), `${METRICS.clientReissueDelaySeconds.prometheusName}_count`)).toBe(1);
  expect(await metric(METRICS.serverProbableReissues.prometheusName, { idempotency: 'not_idempotent' })).toBe(1);
});
