/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Protocol 2026-07-28 end to end in process: the real 2.x server (createMcpHandler over @modelcontextprotocol/node)
 * and the real 2.x client, a real TCP cut between them, and the tools' own ground truth. Each lossy or doubling
 * scenario raises its signal on the side that can see it; each healthy control raises none.
 */
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import {
  connectClient,
  type Cutter,
  type LabClient,
  MODERN,
  type Replica,
  serverSdk,
  sleep,
  startCutter,
  startReplica,
  until,
  useTestResources,
} from './support';

const M = Object.fromEntries(Object.entries(METRICS).map(([k, v]) => [k, v.prometheusName])) as Record<
  keyof typeof METRICS,
  string
>;

const t = useTestResources();

async function lab(config = {}) {
  t.fw = setupForkwatch({ perRequest: { reissueWindowMs: 5_000 }, ...config }, serverSdk);
  const replica = await startReplica();
  t.cleanups.push(() => replica.close());
  const cutter = await startCutter(replica.url);
  t.cleanups.push(() => cutter.close());
  const client = await connectClient(cutter.url);
  t.cleanups.push(() => client.close().catch(() => {}));
  return { replica, cutter, client };
}

const metric = async (name: string, labels: Record<string, string> = {}) =>
  sampleOne(await t.fw!.metrics(), name, labels);

/** Every series of the per-request signals, as a flat record, for "nothing else moved" checks. */
async function signals(): Promise<Record<string, number>> {
  const text = await t.fw!.metrics();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m =
      /^(forkwatch_(server|client)_(exchanges|late_messages|probable_reissues|listen_publishes|orphaned_tasks|task_misses|reissues|listen_streams)_total)(\{[^}]*\})? (\S+)/.exec(
        line,
      );
    if (!m) continue;
    const labels = (m[4] ?? '')
      .replace(/,?otel_scope_\w+="[^"]*"/g, '')
      .replace(/^\{,?/, '{')
      .replace('{}', '');
    out[`${m[1]}${labels === '{' ? '' : labels}`] = Number(m[5]);
  }
  return out;
}

/** Cuts the connection once the call is running on the server. */
async function callAndCut(replica: Replica, cutter: Cutter, client: LabClient, name: string, args: object) {
  const before = replica.truth.executions[name] ?? 0;
  const call = client.callTool({ name, arguments: args }).then(
    (r: unknown) => ({ ok: true, r }),
    (e: unknown) => ({ ok: false, e }),
  );
  await until(() => (replica.truth.executions[name] ?? 0) > before, `${name} to start`);
  cutter.cut();
  return call;
}

describe('per-request server and client at 2026-07-28', () => {
  test('healthy: completed calls count delivered/completed and nothing else', async () => {
    const { client } = await lab();
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: 'write_record', arguments: { ms: 1, key: `k${i}` } });
      expect(result.content[0].text).toBe(`wrote k${i}`);
    }
    const s = await signals();
    expect(s[`${M.serverExchanges}{outcome="delivered"}`]).toBeGreaterThanOrEqual(3);
    expect(s[`${M.clientExchanges}{outcome="completed"}`]).toBeGreaterThanOrEqual(3);
    for (const [series, value] of Object.entries(s)) {
      if (series.includes('outcome="delivered"') || series.includes('outcome="completed"')) continue;
      expect(value, series).toBe(0);
    }
  });

  test('a stream cut mid-call, not re-issued: closed early on the server, the late result dropped, broken on the client', async () => {
    const { replica, cutter, client } = await lab({ perRequest: { reissueWindowMs: 300 } });
    const outcome = await callAndCut(replica, cutter, client, 'write_record', { ms: 200, key: 'cut-1' });
    expect(outcome.ok).toBe(false);
    await until(() => replica.truth.completedAfterAbort === 1, 'the handler to finish after the cut');
    await until(async () => (await metric(M.serverLateMessages, { kind: 'result' })) === 1, 'the late result');
    expect(await metric(M.serverExchanges, { outcome: 'closed_before_response' })).toBe(1);
    expect(await metric(M.clientExchanges, { outcome: 'broken' })).toBe(1);
    await until(async () => (await metric(M.clientReissues, { outcome: 'not_reissued' })) === 1, 'the window to pass');
    expect(await metric(M.clientReissues, { outcome: 'reissued' })).toBe(0);
    expect(await metric(M.serverProbableReissues, { idempotency: 'not_idempotent' })).toBe(0);
  });

  test('a stream cut mid-call and re-issued: a probable re-issue of a non-idempotent tool, executed twice', async () => {
    const { replica, cutter, client } = await lab();
    await callAndCut(replica, cutter, client, 'write_record', { ms: 100, key: 'twice' });
    await sleep(50);
    const again = await client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'twice' } });
    expect(again.content[0].text).toBe('wrote twice');
    expect(replica.truth.executions.write_record).toBe(2); // ground truth: the duplicate execution
    expect(await metric(M.serverProbableReissues, { idempotency: 'not_idempotent' })).toBe(1);
    expect(await metric(M.clientReissues, { outcome: 'reissued' })).toBe(1);
    const text = await t.fw!.metrics();
    expect(sampleOne(text, `${M.clientReissueDelaySeconds}_count`)).toBe(1);
    expect(sampleOne(text, `${M.clientReissueDelaySeconds}_sum`)).toBeGreaterThan(0.04);
  });

  test('healthy: an idempotent tool retried counts apart, never as duplicate-execution risk', async () => {
    const { replica, cutter, client } = await lab();
    await callAndCut(replica, cutter, client, 'read_record', { ms: 100, key: 'r' });
    await client.callTool({ name: 'read_record', arguments: { ms: 100, key: 'r' } });
    expect(await metric(M.serverProbableReissues, { idempotency: 'idempotent' })).toBe(1);
    expect(await metric(M.serverProbableReissues, { idempotency: 'not_idempotent' })).toBe(0);
  });

  test('healthy: different arguments after a cut are no re-issue', async () => {
    const { replica, cutter, client } = await lab();
    await callAndCut(replica, cutter, client, 'write_record', { ms: 100, key: 'a' });
    await client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'b' } });
    expect(await metric(M.serverProbableReissues, { idempotency: 'not_idempotent' })).toBe(0);
    expect(await metric(M.clientReissues, { outcome: 'reissued' })).toBe(0);
  });

  test('healthy: an MRTR round trip is two delivered exchanges and no re-issue', async () => {
    const { replica, client } = await lab();
    const result = await client.callTool({ name: 'confirm_action', arguments: { key: 'm' } });
    expect(result.content[0].text).toBe('confirmed m');
    expect(replica.truth.executions.confirm_action).toBe(2);
    const s = await signals();
    for (const [series, value] of Object.entries(s)) {
      if (series.includes('outcome="delivered"') || series.includes('outcome="completed"')) continue;
      expect(value, series).toBe(0);
    }
  });

  test('healthy: a client cancelling on purpose, a handler that honours it: no late result, no loss on the client', async () => {
    const { replica, client } = await lab();
    const controller = new AbortController();
    const call = client.callTool({ name: 'cooperative_job', arguments: { ms: 5_000 } }, { signal: controller.signal });
    await until(() => replica.truth.executions.cooperative_job === 1, 'the job to start');
    controller.abort();
    await expect(call).rejects.toThrow();
    await until(() => replica.truth.honouredCancel === 1, 'the handler to stop');
    await until(async () => (await metric(M.clientExchanges, { outcome: 'cancelled' })) === 1, 'the client cancel');
    await sleep(50);
    expect(await metric(M.serverExchanges, { outcome: 'closed_before_response' })).toBe(1);
    expect(await metric(M.serverLateMessages, { kind: 'result' })).toBe(0);
    expect(await metric(M.serverLateMessages, { kind: 'error' })).toBe(0);
    expect(await metric(M.clientExchanges, { outcome: 'broken' })).toBe(0);
    expect(await metric(M.clientExchanges, { outcome: 'ended_early' })).toBe(0);
  });

  test('a task whose creating response is cut: orphaned on the server; a tasks/get elsewhere is unknown', async () => {
    const { replica, cutter, client } = await lab();
    await callAndCut(replica, cutter, client, 'start_task', { ms: 100 });
    await until(() => replica.truth.completedAfterAbort === 1, 'the task to be created');
    await until(async () => (await metric(M.serverOrphanedTasks)) === 1, 'the orphaned task');
    expect(replica.truth.tasksCreated).toHaveLength(1);
    // A delivered task is no orphan.
    const delivered = await client.callTool({ name: 'start_task', arguments: { ms: 1 } });
    expect(delivered.content[0].text).toMatch(/^task task-2/);
    expect(await metric(M.serverOrphanedTasks)).toBe(1);
  });
});
