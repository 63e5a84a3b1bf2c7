/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A dual-era server on one process, the pattern the 2.x SDK documents: 2026-07-28 requests to a strict
 * `createMcpHandler` (legacy: 'reject'), 2025-era sessions to a sessionful streamable HTTP transport with an event
 * store. Each era is reported by its own signals and nothing is counted twice: the per-request exchanges equal the
 * modern requests the router saw, and the session metrics do not move with modern traffic.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { LabEventStore, requireFrom, setupForkwatch } from '../server/support';
import { sample } from '../support/lab';
import {
  clientSdk,
  connectClient,
  createLabHandler,
  MODERN,
  serverSdk,
  startCutter,
  until,
  useTestResources,
} from './support';

const nodeSdk = requireFrom()('@modelcontextprotocol/node');
const { z } = requireFrom()('zod');

const t = useTestResources();

const exchangesTotal = (m: string) =>
  ['delivered', 'closed_before_response', 'closed_mid_stream'].reduce(
    (sum, outcome) => sum + (sample(m, METRICS.serverExchanges.prometheusName, { outcome }) ?? 0),
    0,
  );
const sessionEvents = (m: string) => sample(m, METRICS.serverEvents.prometheusName, { transport: 'streamable_http' });

test('2025-era sessions and 2026-07-28 per-request traffic on one process: each reported once, by its own signals', async () => {
  t.fw = setupForkwatch({}, serverSdk);
  // The modern half: the lab's createMcpHandler (legacy: 'reject'), on the same Node server.
  const modern = createLabHandler();
  t.cleanups.push(() => modern.handler.close());
  let modernRequests = 0;
  let legacy: NodeStreamableHTTPServerTransport | undefined;
  const router = createServer(async (req, res) => {
    if (req.headers['mcp-protocol-version'] === MODERN) {
      modernRequests++;
      return modern.listener(req, res);
    }
    if (!legacy) {
      legacy = new nodeSdk.NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => 'legacy-session-1',
        eventStore: new LabEventStore({ idFormat: 'integer' }),
      }) as NodeStreamableHTTPServerTransport;
      const server = new serverSdk.McpServer({ name: 'dual-era-legacy', version: '1.0.0' });
      server.registerTool(
        'echo',
        { inputSchema: z.object({ text: z.string() }) },
        async ({ text }: { text: string }) => ({
          content: [{ type: 'text', text }],
        }),
      );
      await server.connect(legacy);
    }
    await legacy.handleRequest(req, res);
  });
  await new Promise<void>(resolve => router.listen(0, '127.0.0.1', resolve));
  t.cleanups.push(() => new Promise<void>(resolve => router.close(() => resolve())));
  t.cleanups.push(() => router.closeAllConnections());
  const url = `http://127.0.0.1:${(router.address() as AddressInfo).port}/mcp`;

  // 2025-era session traffic.
  const old = new clientSdk.Client({ name: 'legacy-client', version: '1.0.0' });
  await old.connect(new clientSdk.StreamableHTTPClientTransport(new URL(url)));
  t.cleanups.push(() => old.close().catch(() => {}));
  expect(old.getNegotiatedProtocolVersion()).not.toBe(MODERN);
  for (let i = 0; i < 3; i++) await old.callTool({ name: 'echo', arguments: { text: `old ${i}` } });
  const afterLegacy = await t.fw.metrics();
  const legacyEvents = sessionEvents(afterLegacy)!;
  expect(legacyEvents).toBeGreaterThanOrEqual(3);
  expect(exchangesTotal(afterLegacy)).toBe(0);

  // 2026-07-28 per-request traffic, with one broken exchange (a cut between router and client).
  const cutter = await startCutter(url);
  t.cleanups.push(() => cutter.close());
  const client = await connectClient(cutter.url);
  t.cleanups.push(() => client.close().catch(() => {}));
  for (let i = 0; i < 3; i++) await client.callTool({ name: 'write_record', arguments: { ms: 1, key: `new ${i}` } });
  const cut = client.callTool({ name: 'write_record', arguments: { ms: 150, key: 'cut' } }).catch(() => undefined);
  await until(() => modern.truth.executions.write_record === 4, 'the call to start');
  cutter.cut();
  await cut;
  await until(() => modern.truth.completedAfterAbort === 1, 'the late completion');
  await until(
    async () => sample(await t.fw!.metrics(), METRICS.serverLateMessages.prometheusName, { kind: 'result' }) === 1,
    'the late result',
  );
  const afterModern = await t.fw.metrics();
  // Every modern request is exactly one exchange; none of them moved the session metrics.
  expect(exchangesTotal(afterModern)).toBe(modernRequests);
  expect(sample(afterModern, METRICS.serverExchanges.prometheusName, { outcome: 'delivered' })).toBe(
    modernRequests - 1,
  );
  expect(sessionEvents(afterModern)).toBe(legacyEvents);
  for (const reason of ['stream_moved', 'no_listener', 'dropped', 'abandoned'])
    expect(sample(afterModern, METRICS.serverUndeliveredEvents.prometheusName, { reason })).toBe(0);

  // More 2025-era traffic moves only the session metrics.
  await old.callTool({ name: 'echo', arguments: { text: 'old again' } });
  const last = await t.fw.metrics();
  expect(sessionEvents(last)).toBeGreaterThan(legacyEvents);
  expect(exchangesTotal(last)).toBe(modernRequests);
});
