/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real @hono/mcp server (its own StreamableHTTPTransport, 0.3 pinned in test/sdk-versions/hono-mcp, one transport
 * per session, with its MemoryEventStore) preloaded with `forkwatch/register` reports on its own /metrics the events
 * it drops: its `send` returns before storing a standalone event while no GET stream is open, so a client that comes
 * back with its cursor is replayed nothing of them. Healthy traffic (the stream open) counts none. Its event store,
 * kept in a #private field, is watched from the transport's construction: a cursor the store does not know (answered
 * with a stream that never carries anything) counts unknown_cursor, one store shared by sessions replaying another
 * session's events counts cross_session, and a real replay counts replayed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { RawMcpSession } from '../support/raw-mcp-session';
import { sample, sampleOne } from '../support/scrape';
import { STARTUP_MS, nonZero, root, startStackServer } from './stack-server';

const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const resumes = METRICS.serverResumes.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const info = METRICS.instrumentationInfo.prometheusName;
const SCRIPT = 'lab/stacks/hono-mcp-server.mjs';
const TEST_MS = STARTUP_MS + 60_000;
const DELIVERY_WINDOW_MS = 1000; // stack-server.ts

/** Opens the session's GET stream, has `count` events sent on it, drops it: the first event's id, as a cursor. */
async function streamThenDrop(session: RawMcpSession, count: number): Promise<string> {
  const stream = await session.openGet();
  await session.callTool('emit', { count });
  await stream.waitForMessages(count);
  const cursor = stream.messages()[0]!.id!;
  stream.close();
  await new Promise(r => setTimeout(r, 300)); // the server sees the close
  return cursor;
}

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
      const cursor = await streamThenDrop(session, 1);
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
      // The 3 lost, and at most one more: the event written just before the close, in flight (core/delivery-ledger.ts)
      // when a loaded server sees the close only after the 3 were written to the dead connection. Never the events
      // the client received on a live stream (#1, #5): counting those is the regression this bound catches.
      const moved = sample(text, undelivered, { reason: 'stream_moved' });
      expect(moved).toBeGreaterThanOrEqual(3);
      expect(moved).toBeLessThanOrEqual(4);
      for (const reason of ['dropped', 'no_listener', 'abandoned'])
        expect(sample(text, undelivered, { reason })).toBe(0);
    },
    TEST_MS,
  );

  test(
    'no event store: a cut right after writes is in_flight (exposure), never a loss; events sent while away are dropped',
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT, { eventStore: 'none' });
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const stream = await session.openGet();
      await session.callTool('emit', { count: 3 });
      await stream.waitForMessages(3); // the client has all three
      stream.close(); // and the connection drops right after: without ids or a store, nobody can tell
      await new Promise(r => setTimeout(r, 300)); // the server sees the close
      await session.callTool('emit', { count: 2 }); // nowhere to go
      const again = await session.openGet(); // no cursor: the ids a store would give do not exist
      expect(again.status).toBe(200);
      // The session goes on talking past the window: the two sent while away are lost, the three written are not.
      await new Promise(r => setTimeout(r, DELIVERY_WINDOW_MS + 300));
      const text = await server.counted(undelivered, { reason: 'dropped' }, 2, () =>
        session.callTool('emit', { count: 0 }),
      );
      again.close();
      expect(nonZero(text, undelivered).sort()).toEqual([
        'forkwatch_server_undelivered_events_total{transport="streamable_http",reason="dropped"} 2',
        'forkwatch_server_undelivered_events_total{transport="streamable_http",reason="in_flight"} 3',
      ]);
    },
    TEST_MS,
  );

  test(
    'no event store, healthy: a quiet cut and reconnect count nothing; a client that then crashes counts no loss',
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT, { eventStore: 'none' });
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const stream = await session.openGet();
      await session.callTool('emit', { count: 3 });
      await stream.waitForMessages(3);
      await new Promise(r => setTimeout(r, 700)); // quiet past inflightMs (500 ms): nothing in flight at the cut
      stream.close();
      await new Promise(r => setTimeout(r, 300)); // the server sees the close
      const again = await session.openGet();
      await session.callTool('emit', { count: 1 });
      await again.waitForMessages(1);
      // The session talks on past the window: nothing was pending, nothing is judged.
      await new Promise(r => setTimeout(r, DELIVERY_WINDOW_MS + 300));
      await session.callTool('emit', { count: 1 });
      await again.waitForMessages(2);
      const text = await server.counted(events, { transport: 'streamable_http' }, 5);
      expect(nonZero(text, undelivered)).toEqual([]);
      // Then a quiet cut, one event with nowhere to go, and the client never comes back (a crash): no loss is
      // judged for a session that shows no sign of life here.
      await new Promise(r => setTimeout(r, 700));
      again.close();
      await new Promise(r => setTimeout(r, 300));
      await session.callTool('emit', { count: 1 }); // its last request, before the crash
      await new Promise(r => setTimeout(r, 2 * DELIVERY_WINDOW_MS + 300));
      const after = await server.counted(events, { transport: 'streamable_http' }, 6);
      expect(nonZero(after, undelivered)).toEqual([]);
    },
    TEST_MS,
  );

  test(
    'healthy: a resume after a dropped GET replays the events after the cursor, counted replayed',
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const cursor = await streamThenDrop(session, 3);
      const resumed = await session.openGet(cursor);
      expect(resumed.status).toBe(200);
      await resumed.waitForMessages(2);
      expect(resumed.messages().map(m => m.message.params?.data?.seq)).toEqual([2, 3]);
      const text = await server.counted(resumes, { outcome: 'replayed' }, 1);
      resumed.close();
      expect(sample(text, resumes, { transport: 'streamable_http', outcome: 'replayed' })).toBe(1);
      expect(nonZero(text, resumes)).toHaveLength(1);
    },
    TEST_MS,
  );

  test(
    'unknown cursor: answered 200 with a stream that never carries anything, counted unknown_cursor',
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const resumed = await session.openGet('3f0c9a52-8d7e-4b1a-9c61-5a2e7d4b0f18');
      expect(resumed.status).toBe(200);
      await session.callTool('emit', { count: 2 }); // to the standalone stream, which this one is not
      const text = await server.counted(resumes, { outcome: 'unknown_cursor' }, 1);
      expect(resumed.messages()).toEqual([]);
      resumed.close();
      expect(sample(text, resumes, { transport: 'streamable_http', outcome: 'unknown_cursor' })).toBe(1);
      expect(sampleOne(text, resumes, { outcome: 'replayed' }) ?? 0).toBe(0);
    },
    TEST_MS,
  );

  test(
    "shared store: a resume replaying another session's events counts cross_session",
    async () => {
      const server = await startStackServer('hono-mcp', SCRIPT, { eventStore: 'shared' });
      const mine = new RawMcpSession(server.url);
      const other = new RawMcpSession(server.url);
      await mine.initialize();
      await other.initialize();
      const cursor = await streamThenDrop(mine, 1);
      const theirs = await other.openGet();
      await other.callTool('emit', { count: 3 });
      await theirs.waitForMessages(3);
      theirs.close();

      // The one store keeps every session's standalone events under one stream id: mine gets theirs.
      const resumed = await mine.openGet(cursor);
      expect(resumed.status).toBe(200);
      await resumed.waitForMessages(3);
      expect(resumed.messages().map(m => m.message.params?.data?.seq)).toEqual([2, 3, 4]);
      const text = await server.counted(resumes, { outcome: 'cross_session' }, 1);
      resumed.close();
      expect(sample(text, resumes, { transport: 'streamable_http', outcome: 'cross_session' })).toBe(1);
      expect(sampleOne(text, resumes, { outcome: 'replayed' }) ?? 0).toBe(0);
    },
    TEST_MS,
  );
});
