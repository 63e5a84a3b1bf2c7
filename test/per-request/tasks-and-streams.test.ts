/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Per-request exchanges on SSE response streams, late notifications and tasks (app-level SEP-2663 shapes: the 2.x
 * SDK has no task runtime), on the real 2.x packages at 2026-07-28.
 */
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { connectClient, rawRequest, serverSdk, startCutter, startReplica, until, useTestResources } from './support';

const M = Object.fromEntries(Object.entries(METRICS).map(([k, v]) => [k, v.prometheusName])) as Record<
  keyof typeof METRICS,
  string
>;
const t = useTestResources();
const metric = async (name: string, labels: Record<string, string> = {}) =>
  sampleOne(await t.fw!.metrics(), name, labels);

describe('SSE response streams and tasks at 2026-07-28', () => {
  test('a stream cut mid-call on an SSE response: closed_mid_stream on the server, broken on the client', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const replica = await startReplica({ responseMode: 'sse' });
    t.cleanups.push(() => replica.close());
    const cutter = await startCutter(replica.url);
    t.cleanups.push(() => cutter.close());
    const client = await connectClient(cutter.url);
    t.cleanups.push(() => client.close().catch(() => {}));
    await client.callTool({ name: 'write_record', arguments: { ms: 1, key: 'ok' } });
    const call = client.callTool({ name: 'write_record', arguments: { ms: 150, key: 'sse' } }, { timeout: 2_000 });
    const settled = call.then(
      () => 'resolved',
      () => 'rejected',
    );
    await until(() => replica.truth.executions.write_record === 2, 'the call to start');
    cutter.cut();
    await until(async () => (await metric(M.clientExchanges, { outcome: 'broken' })) === 1, 'the broken stream');
    await until(() => replica.truth.completedAfterAbort === 1, 'the handler to finish');
    await until(async () => (await metric(M.serverLateMessages, { kind: 'result' })) === 1, 'the late result');
    expect(await metric(M.serverExchanges, { outcome: 'closed_mid_stream' })).toBe(1);
    expect(await metric(M.serverExchanges, { outcome: 'closed_before_response' })).toBe(0);
    // SDK behaviour (typescript-sdk #2739): the app's call hangs until its timeout; forkwatch saw the break at once.
    expect(await settled).toBe('rejected');
  });

  test('a handler reporting back after the client left: a late notification, as the SDK threw it to the handler', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const replica = await startReplica();
    t.cleanups.push(() => replica.close());
    const cutter = await startCutter(replica.url);
    t.cleanups.push(() => cutter.close());
    const client = await connectClient(cutter.url);
    t.cleanups.push(() => client.close().catch(() => {}));
    const call = client.callTool({ name: 'report_back', arguments: { ms: 100 } }).catch(() => undefined);
    await until(() => replica.truth.executions.report_back === 1, 'the call to start');
    cutter.cut();
    await call;
    await until(() => replica.truth.notifyFailed === 1, 'the notification attempt');
    await until(async () => (await metric(M.serverLateMessages, { kind: 'notification' })) === 1, 'the count');
    expect(await metric(M.serverLateMessages, { kind: 'result' })).toBe(1);
  });

  test('healthy: a notification within the exchange is no late message', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const replica = await startReplica();
    t.cleanups.push(() => replica.close());
    const client = await connectClient(replica.url);
    t.cleanups.push(() => client.close().catch(() => {}));
    await client.callTool({ name: 'report_back', arguments: { ms: 1 } });
    expect(replica.truth.notifyFailed).toBe(0);
    expect(await metric(M.serverLateMessages, { kind: 'notification' })).toBe(0);
    expect(await metric(M.serverExchanges, { outcome: 'closed_mid_stream' })).toBe(0);
  });

  test('tasks/get misses: expired for a task created here, unknown for one this process never created', async () => {
    t.fw = setupForkwatch({}, serverSdk);
    const a = await startReplica();
    t.cleanups.push(() => a.close());
    const client = await connectClient(a.url);
    t.cleanups.push(() => client.close().catch(() => {}));
    await client.callTool({ name: 'start_task', arguments: { ms: 1 } });
    const [taskId] = a.truth.tasksCreated;
    const found = await rawRequest(a.url, 1, 'tasks/get', { taskId }, taskId);
    expect(found.body.result.taskId).toBe(taskId);
    // A poll a balancer sent here although another replica created the task (Mcp-Name ignored): never created here.
    // (Replicas are processes; in this one process every replica shares forkwatch's registry, so the id is new.)
    const misrouted = await rawRequest(a.url, 2, 'tasks/get', { taskId: 'task-of-replica-b' }, 'task-of-replica-b');
    expect(misrouted.body.error.code).toBe(-32602);
    a.expireTasks();
    const expired = await rawRequest(a.url, 3, 'tasks/get', { taskId }, taskId);
    expect(expired.body.error.code).toBe(-32602);
    expect(await metric(M.serverTaskMisses, { reason: 'unknown' })).toBe(1);
    expect(await metric(M.serverTaskMisses, { reason: 'expired' })).toBe(1);
    expect(await metric(M.serverOrphanedTasks)).toBe(0);
  });
});
