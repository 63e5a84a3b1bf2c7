/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real @hono/mcp server (its own StreamableHTTPTransport, 0.3 pinned in test/sdk-versions/hono-mcp, one transport
 * per session, with its MemoryEventStore) preloaded with `forkwatch/register` reports on its own /metrics the events
 * it drops: its `send` returns before storing a standalone event while no GET stream is open, so a client that comes
 * back with its cursor is replayed nothing of them. Healthy traffic (the stream open) counts none.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { RawMcpSession } from '../support/raw-mcp-session';
import { sample } from '../support/scrape';
import { STARTUP_MS, nonZero, root, startStackServer } from './stack-server';

const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const info = METRICS.instrumentationInfo.prometheusName;
const SCRIPT = 'lab/stacks/hono-mcp-server.mjs';
const TEST_MS = STARTUP_MS + 60_000;
const DELIVERY_WINDOW_MS = 1000; // stack-server.ts

describe('@hono/mcp', () => {
  test('the app folder pins the version under test', () => {
    const pkg = JSON.parse(
      readFileSync(join(root, 'test/sdk-versions/hono-mcp/node_modules/@hono/mcp/package.json'), 'utf8'),
    );
    expect(pkg.version).toMatch(/^0\.3\./);
  });

  test(
    'healthy: standalone events sent while the GET stream is open count as delivered',
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const stream = await session.openGet();
      expect(stream.status).toBe(200);
      await session.callTool('emit', { count: 3 });
      await stream.waitForMessages(3);
      // The session goes on talking past the delivery window: nothing is pending, nothing is judged lost.
      await new Promise(r => setTimeout(r, DELIVERY_WINDOW_MS + 200));
      await session.callTool('emit', { count: 1 });
      await stream.waitForMessages(4);
      const text = await server.counted(events, { transport: 'streamable_http' }, 4);
      stream.close();
      expect(sample(text, info, { sdk_package: '@hono/mcp', sdk_class: 'StreamableHTTPTransport' })).toBe(1);
      expect(nonZero(text, undelivered)).toEqual([]);
    },
    TEST_MS,
  );

  test(
    'forked: standalone events sent while no GET is open are dropped before the store, and counted',
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const first = await session.openGet();
      await session.callTool('emit', { count: 1 });
      await first.waitForMessages(1);
      const cursor = first.messages()[0]!.id!;
      first.close();
      await new Promise(r => setTimeout(r, 300)); // the server sees the close
      await session.callTool('emit', { count: 3 }); // sent while the client is away
      const resumed = await session.openGet(cursor);
      expect(resumed.status).toBe(200);
      await session.callTool('emit', { count: 1 });
      await resumed.waitForMessages(1);
      // The resume replayed none of the 3: they were never stored. The fork is real.
      expect(resumed.messages().map(m => m.message.params?.data?.seq)).toEqual([5]);
      resumed.close();

      // The session goes on talking here past the delivery window and never gets them: stream_moved, a loss.
      const text = await server.counted(undelivered, { reason: 'stream_moved' }, 3, () =>
        session.callTool('emit', { count: 0 }),
      );
      // At least the 3: the event written just before the close is in flight and may count too.
      expect(sample(text, undelivered, { reason: 'stream_moved' })).toBeGreaterThanOrEqual(3);
      for (const reason of ['dropped', 'no_listener', 'abandoned'])
        expect(sample(text, undelivered, { reason })).toBe(0);
    },
    TEST_MS,
  );
});
