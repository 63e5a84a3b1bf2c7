/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real tmcp server (tmcp 1.20 and its own HttpTransport from @tmcp/transport-http 0.9, pinned in
 * test/sdk-versions/tmcp; ESM only, no @modelcontextprotocol package) preloaded with `forkwatch/register` counts what
 * its design does on its own /metrics: a resume it cannot honour (`ignored`: no event store, Last-Event-ID never
 * read) and a session id it never issued answered with a fresh stream (revived, `empty`), and the notifications a
 * cut SSE stream lost: tmcp writes a broadcast to the GET streams open at that moment and to nobody else, so what it
 * broadcast while a session's stream was down is gone, and the resume gets a fresh stream. Healthy traffic counts
 * none of these.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { type OpenStream, RawMcpSession } from '../support/raw-mcp-session';
import { sample } from '../support/scrape';
import { STARTUP_MS, nonZero, root, startStackServer } from './stack-server';

const resumes = METRICS.serverResumes.prometheusName;
const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const events = METRICS.serverEvents.prometheusName;
const revived = METRICS.serverRevivedSessions.prometheusName;
const info = METRICS.instrumentationInfo.prometheusName;
const SCRIPT = 'lab/stacks/tmcp-server.mjs';

const TEST_MS = STARTUP_MS + 60_000;
const DELIVERY_WINDOW_MS = 1000; // stack-server.ts

/** Has the server broadcast `count` notifications (tools/list_changed) to every GET stream open now. */
const broadcast = (session: RawMcpSession, count: number) => session.callTool('broadcast', { count });

/** Opens the session's GET stream again; a 409 means tmcp has not yet seen the old one close: try again. */
async function reopen(session: RawMcpSession, cursor?: string): Promise<OpenStream> {
  for (let tries = 0; ; tries++) {
    const stream = await session.openGet(cursor);
    if (stream.status !== 409 || tries > 50) return stream;
    await new Promise(r => setTimeout(r, 50));
  }
}

describe('tmcp', () => {
  test('the app folder pins the versions under test', () => {
    const version = (pkg: string) =>
      JSON.parse(readFileSync(join(root, 'test/sdk-versions/tmcp/node_modules', pkg, 'package.json'), 'utf8')).version;
    expect(version('tmcp')).toMatch(/^1\.20\./);
    expect(version('@tmcp/transport-http')).toMatch(/^0\.9\./);
  });

  test(
    'healthy: a session that reopens its stream on the process that issued it counts nothing',
    async () => {
      const first = await startStackServer('tmcp', SCRIPT);
      const session = new RawMcpSession(first.url);
      await session.initialize();
      expect(await session.callTool('emit', { count: 2 })).toMatchObject({ content: [{ text: 'emitted 2' }] });
      const stream = await session.openGet();
      expect(stream.status).toBe(200);
      stream.close();
      // tmcp frees the session's stream once it sees the cancel: a second GET before that is a 409.
      let again = await session.openGet();
      for (let tries = 0; again.status === 409 && tries < 50; tries++) {
        await new Promise(r => setTimeout(r, 50));
        again = await session.openGet();
      }
      expect(again.status).toBe(200);
      again.close();
      await session.callTool('emit', { count: 1 });

      const text = await first.metrics();
      expect(sample(text, info, { sdk_package: '@tmcp/transport-http', sdk_class: 'HttpTransport' })).toBe(1);
      expect(nonZero(text, revived)).toEqual([]);
      expect(nonZero(text, resumes)).toEqual([]);
    },
    TEST_MS,
  );

  test(
    'forked: a GET for a session of another process gets 200 and a fresh stream, counted revived (empty)',
    async () => {
      // Two processes of one deployment: a session of the first, reconnecting to the second after losing the first.
      const [first, second] = await Promise.all([startStackServer('tmcp', SCRIPT), startStackServer('tmcp', SCRIPT)]);
      const session = new RawMcpSession(first.url);
      await session.initialize();
      const lost = new RawMcpSession(second.url);
      lost.sessionId = session.sessionId; // the client lost the first process and reconnects where it is sent
      const stream = await lost.openGet();
      expect(stream.status).toBe(200); // tmcp's answer: a fresh stream under the old id, not 404
      stream.close();
      await lost.callTool('emit', { count: 1 }); // the session goes on as if nothing happened: one revival, not two

      const text = await second.counted(revived, { state: 'empty' }, 1);
      expect(sample(text, revived, { state: 'empty' })).toBe(1);
      expect(sample(text, revived, { state: 'restored' })).toBe(0);
      expect(nonZero(text, resumes)).toEqual([]);
      expect(nonZero(await first.metrics(), revived)).toEqual([]); // the process that issued it counts nothing
    },
    TEST_MS,
  );

  test(
    'forked: a resume with Last-Event-ID gets 200 and a fresh stream, counted ignored',
    async () => {
      const first = await startStackServer('tmcp', SCRIPT);
      const session = new RawMcpSession(first.url);
      await session.initialize();
      const stream = await session.openGet('a-cursor-from-another-log');
      expect(stream.status).toBe(200);
      await session.callTool('emit', { count: 1 });
      stream.close();
      expect(stream.frames.every(frame => frame.id === undefined)).toBe(true); // nothing it sends can be resumed

      const text = await first.counted(resumes, { outcome: 'ignored' }, 1);
      expect(sample(text, resumes, { outcome: 'ignored' })).toBe(1);
      for (const outcome of ['replayed', 'unknown_cursor', 'rejected', 'failed'])
        expect(sample(text, resumes, { outcome })).toBe(0);
      // The session was issued here: its resume is no revival.
      expect(sample(text, revived, { state: 'empty' })).toBe(0);
    },
    TEST_MS,
  );

  test(
    'forked: a stream cut after 5 of 20 notifications, resumed with Last-Event-ID: the 6 broadcast meanwhile are lost, and counted undelivered',
    async () => {
      const server = await startStackServer('tmcp', SCRIPT);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const first = await session.openGet();
      expect(first.status).toBe(200);
      await broadcast(session, 5);
      await first.waitForMessages(5);
      first.close(); // the SSE connection really drops: the client goes away in the middle of the stream
      await new Promise(r => setTimeout(r, 300)); // the server sees the close
      await broadcast(session, 6); // while no stream of the session is open: tmcp writes them nowhere
      const resumed = await reopen(session, '5'); // tmcp ignores Last-Event-ID: a fresh stream
      expect(resumed.status).toBe(200);
      await broadcast(session, 9);
      await resumed.waitForMessages(9);
      const arrived = first.messages().length + resumed.messages().length;
      expect(arrived).toBe(14);
      const lost = 20 - arrived;

      // The session goes on talking here past the delivery window: the 6 had nowhere to go (no event store).
      const text = await server.counted(undelivered, { reason: 'dropped' }, lost, () => broadcast(session, 0));
      resumed.close();
      process.stderr.write(
        `tmcp cut: 20 sent, ${arrived} arrived, ${sample(text, undelivered, { reason: 'dropped' })} counted undelivered\n`,
      );
      expect(sample(text, undelivered, { reason: 'dropped' })).toBe(lost);
      for (const reason of ['stream_moved', 'no_listener', 'abandoned'])
        expect(sample(text, undelivered, { reason })).toBe(0);
      expect(sample(text, events, { transport: 'streamable_http' })).toBe(20);
      expect(sample(text, resumes, { outcome: 'ignored' })).toBe(1);
    },
    TEST_MS,
  );

  test(
    'healthy: 20 notifications on an open stream, and a quiet stream cut and reopened, count nothing undelivered; a cut right after writes is in_flight (exposure), never a loss',
    async () => {
      const server = await startStackServer('tmcp', SCRIPT);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const stream = await session.openGet();
      expect(stream.status).toBe(200);
      await broadcast(session, 20);
      await stream.waitForMessages(20);
      // Quiet past inflightMs (500 ms) before the cut, as a balancer's idle timeout: nothing was in flight.
      await new Promise(r => setTimeout(r, 700));
      stream.close();
      await new Promise(r => setTimeout(r, 300)); // the server sees the close
      const again = await reopen(session);
      expect(again.status).toBe(200);
      await broadcast(session, 1);
      await again.waitForMessages(1);
      // Past the delivery window, the session goes on talking: nothing is pending, nothing is judged lost.
      await new Promise(r => setTimeout(r, DELIVERY_WINDOW_MS + 300));
      await broadcast(session, 1);
      await again.waitForMessages(2);
      const text = await server.counted(events, { transport: 'streamable_http' }, 22);
      expect(sample(text, events, { transport: 'streamable_http' })).toBe(22);
      expect(nonZero(text, undelivered)).toEqual([]);
      // Then cut right after three writes the client read: tmcp keeps no store, and whether those bytes arrived the
      // server cannot tell. Exposure at the drop; the session talking past the window proves no loss of them.
      await new Promise(r => setTimeout(r, 700));
      await broadcast(session, 3);
      await again.waitForMessages(5);
      again.close();
      await new Promise(r => setTimeout(r, 300)); // the server sees the close
      const third = await reopen(session);
      expect(third.status).toBe(200);
      await new Promise(r => setTimeout(r, DELIVERY_WINDOW_MS + 300));
      await broadcast(session, 1);
      await third.waitForMessages(1);
      const after = await server.counted(events, { transport: 'streamable_http' }, 26);
      third.close();
      expect(nonZero(after, undelivered)).toEqual([
        'forkwatch_server_undelivered_events_total{transport="streamable_http",reason="in_flight"} 3',
      ]);
    },
    TEST_MS,
  );
});
