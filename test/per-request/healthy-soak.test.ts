/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Healthy 2026-07-28 traffic under concurrency: clients calling tools, MRTR rounds, idempotent retries of completed
 * calls, cancellations honoured by the handler, listen streams receiving publishes. No loss or doubling signal may
 * move: no late result or error, no probable re-issue, no broken or early-ended exchange, no publish without a
 * listener, no dropped listen stream.
 */
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { connectClient, serverSdk, startReplica, until, useTestResources } from './support';

const t = useTestResources();

test('healthy traffic from 6 concurrent clients raises no loss or doubling signal', async () => {
  t.fw = setupForkwatch({}, serverSdk);
  const replica = await startReplica();
  t.cleanups.push(() => replica.close());
  const clients = await Promise.all(Array.from({ length: 6 }, () => connectClient(replica.url)));
  for (const c of clients) t.cleanups.push(() => c.close().catch(() => {}));
  const received: number[] = clients.map(() => 0);
  clients.forEach((c, i) => {
    c.setNotificationHandler('notifications/tools/list_changed', () => {
      received[i]! += 1;
    });
  });
  const subs = await Promise.all(clients.map(c => c.listen({ toolsListChanged: true })));
  let cancels = 0;
  await Promise.all(
    clients.map(async (client, i) => {
      for (let round = 0; round < 6; round++) {
        await client.callTool({ name: 'write_record', arguments: { ms: 2, key: `c${i}-r${round}` } });
        await client.callTool({ name: 'confirm_action', arguments: { key: `c${i}-r${round}` } });
        // An idempotent call made twice on purpose, both completed: no broken exchange, so no re-issue.
        await client.callTool({ name: 'read_record', arguments: { ms: 1, key: `c${i}` } });
        await client.callTool({ name: 'read_record', arguments: { ms: 1, key: `c${i}` } });
        if (round % 2 === 0) {
          const controller = new AbortController();
          const call = client.callTool(
            { name: 'cooperative_job', arguments: { ms: 5_000 } },
            { signal: controller.signal },
          );
          setTimeout(() => controller.abort(), 100);
          await call.catch(() => cancels++);
        }
      }
    }),
  );
  for (let n = 0; n < 5; n++) replica.handler.notify.toolsChanged();
  await until(() => received.every(r => r === 5), 'every listener to receive every publish');
  // Every job that started was cancelled and stopped (an abort before the request reached the server starts none).
  await until(
    () => replica.truth.honouredCancel === (replica.truth.executions.cooperative_job ?? 0),
    'the handlers to stop',
  );
  await Promise.all(subs.map(s => s.close()));
  const m = await t.fw.metrics();
  const zero = (name: string, labels: Record<string, string>) => expect(sampleOne(m, name, labels), name).toBe(0);
  for (const kind of ['result', 'error', 'notification']) zero(METRICS.serverLateMessages.prometheusName, { kind });
  for (const idempotency of ['not_idempotent', 'idempotent', 'not_a_tool'])
    zero(METRICS.serverProbableReissues.prometheusName, { idempotency });
  zero(METRICS.serverListenPublishes.prometheusName, { outcome: 'no_listener' });
  zero(METRICS.serverOrphanedTasks.prometheusName, {});
  for (const outcome of ['ended_early', 'broken', 'failed']) zero(METRICS.clientExchanges.prometheusName, { outcome });
  for (const outcome of ['reissued', 'not_reissued']) zero(METRICS.clientReissues.prometheusName, { outcome });
  zero(METRICS.clientListenStreams.prometheusName, { outcome: 'dropped' });
  // What did move, for the record: every call delivered, the cancellations closed before any response.
  expect(cancels).toBe(18);
  const started = replica.truth.executions.cooperative_job ?? 0;
  expect(started).toBeGreaterThan(0);
  expect(sampleOne(m, METRICS.serverExchanges.prometheusName, { outcome: 'closed_before_response' })).toBe(started);
  expect(sampleOne(m, METRICS.clientExchanges.prometheusName, { outcome: 'cancelled' })).toBe(cancels);
  expect(sampleOne(m, METRICS.serverListenPublishes.prometheusName, { outcome: 'listened' })).toBe(5);
  expect(sampleOne(m, METRICS.clientListenStreams.prometheusName, { outcome: 'cancelled' })).toBe(6);
  // 6 clients x 6 rounds x (1 + 2 MRTR rounds + 2) completed calls, plus each client's server/discover probe.
  expect(sampleOne(m, METRICS.clientExchanges.prometheusName, { outcome: 'completed' })).toBe(6 * 6 * 5 + 6);
});
