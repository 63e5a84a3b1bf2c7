/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Real fastmcp and mcp-proxy servers (pinned in test/sdk-versions/fastmcp and test/sdk-versions/mcp-proxy), each in a
 * child process preloaded with `forkwatch/register`, report their resumes on their own /metrics as the SDK's server
 * does. Both serve HTTP through mcp-proxy, whose bundle imports a nested copy of @modelcontextprotocol/server 2.x
 * (next to an SDK 1.x copy, in fastmcp's case) and keeps its own event store: the module hooks must find that copy.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { detectCodec } from '../../src/core/codecs';
import { METRICS } from '../../src/shared/names';
import { startApp } from '../register/support';
import { leasePort } from '../support/prometheus';
import { type OpenStream, RawMcpSession } from '../support/raw-mcp-session';
import { sample } from '../support/scrape';

const root = join(__dirname, '../..');
const register = join(root, 'build/src/register.js');
const resumes = METRICS.serverResumes.prometheusName;
const gapEvents = `${METRICS.serverResumeGapEvents.prometheusName}_sum`;
const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
const DELIVERY_WINDOW_MS = 1000;
const PATCHED_SERVER = /patched WebStandardStreamableHTTPServerTransport of @modelcontextprotocol\/server@2\./;
const STARTUP_MS = 150_000; // import-in-the-middle reads mcp-proxy's 20,000-line bundle on a shared CPU

const stacks = [
  { name: 'mcp-proxy', folder: 'mcp-proxy', script: 'lab/stacks/mcp-proxy-server.mjs', major: /^6\./ },
  { name: 'fastmcp', folder: 'fastmcp', script: 'lab/stacks/fastmcp-server.mjs', major: /^4\./ },
] as const;
const mcpHandler = {
  name: 'mcp-handler',
  folder: 'mcp-handler',
  script: 'lab/stacks/mcp-handler-server.mjs',
  major: /^2\./,
};

type Stack = (typeof stacks)[number] | typeof mcpHandler;

async function startStack(stack: Stack, server: Record<string, unknown> = {}) {
  const folder = join(root, 'test/sdk-versions', stack.folder);
  const port = await leasePort();
  const metricsPort = await leasePort();
  const app = startApp({
    cwd: folder,
    args: ['--import', register, join(root, stack.script)],
    env: {
      STACK_APP: folder,
      STACK_SERVER: JSON.stringify({ port, ...server }),
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
      OTEL_LOG_LEVEL: 'debug',
      FORKWATCH_DELIVERY_WINDOW_MS: String(DELIVERY_WINDOW_MS),
    },
  });
  await app.waitForStderr(/STACK LISTENING/, STARTUP_MS);
  const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  /** Scrapes until `family{labels}` reached `count` (recording settles after the answer, the ledger after its window). */
  const counted = async (family: string, labels: Record<string, string>, count: number) => {
    for (const deadline = Date.now() + 30_000; ; ) {
      const text = await metrics();
      if ((sample(text, family, labels) ?? 0) >= count) return text;
      if (Date.now() > deadline)
        throw new Error(`no ${count} ${family}${JSON.stringify(labels)} on /metrics:\n${text}`);
      await new Promise(r => setTimeout(r, 100));
    }
  };
  const resumesCounted = (outcome: string, count: number) => counted(resumes, { outcome }, count);
  /**
   * The session goes on talking (`talk`, every 200 ms) until the server counted `count` undelivered events with
   * `reason`: overdue events count only on a request after the delivery window.
   */
  const undeliveredCounted = async (reason: string, count: number, talk: () => Promise<unknown>) => {
    for (const deadline = Date.now() + 30_000; ; ) {
      await talk();
      const text = await metrics();
      if ((sample(text, undelivered, { reason }) ?? 0) >= count) return text;
      if (Date.now() > deadline) throw new Error(`no ${count} undelivered ${reason} event(s) on /metrics:\n${text}`);
      await new Promise(r => setTimeout(r, 200));
    }
  };
  return { app, url: `http://127.0.0.1:${port}/mcp`, metrics, resumesCounted, undeliveredCounted };
}

/** Resumes the standalone stream; a 409 means the server has not yet seen the old stream close: try again. */
async function resume(session: RawMcpSession, cursor: string): Promise<{ stream: OpenStream; conflicts: number }> {
  for (let conflicts = 0; ; conflicts++) {
    const stream = await session.openGet(cursor);
    if (stream.status !== 409 || conflicts > 50) return { stream, conflicts };
    await new Promise(r => setTimeout(r, 50));
  }
}

describe.each(stacks)('$name', stack => {
  test('the app folder pins the version under test', () => {
    const pkg = JSON.parse(
      readFileSync(join(root, 'test/sdk-versions', stack.folder, 'node_modules', stack.name, 'package.json'), 'utf8'),
    );
    expect(pkg.version).toMatch(stack.major);
  });

  test.each(['esm', 'cjs'] as const)(
    '%s app, healthy: a resume is replayed from its own store with the exact events missed; ids in the mcp-proxy format',
    async moduleSystem => {
      // Under CommonJS, the ESM-only mcp-proxy comes through require(esm), which the ESM loader hooks never see.
      const server = await startStack(stack, { moduleSystem });
      // The module hooks found mcp-proxy's nested @modelcontextprotocol/server copy. With synchronous loader hooks
      // the app listens before register decided, and the line (held until then) follows STACK LISTENING.
      await server.app.waitForStderr(PATCHED_SERVER, 10_000);
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const first = await session.openGet();
      expect(first.status).toBe(200);
      await session.callTool('emit', { count: 3 });
      await first.waitForMessages(3);
      const ids = first.messages().map(m => m.id!);
      for (const id of ids) {
        expect(detectCodec(id)?.name).toBe('mcp-proxy');
        expect(detectCodec(id)?.decode(id)).toMatchObject({ stream: '_GET_stream', sharedStream: true });
      }
      first.close();
      await session.callTool('emit', { count: 2 }); // stored while the client is away
      const { stream, conflicts } = await resume(session, ids.at(-1)!);
      expect(stream.status).toBe(200);
      await stream.waitForMessages(2);
      stream.close();

      const text = await server.resumesCounted('replayed', 1);
      expect(sample(text, resumes, { outcome: 'replayed' })).toBe(1);
      expect(sample(text, gapEvents)).toBe(2);
      expect(sample(text, resumes, { outcome: 'rejected' })).toBe(conflicts);
      expect(sample(text, resumes, { outcome: 'unknown_cursor' })).toBe(0);
      expect(sample(text, resumes, { outcome: 'ignored' })).toBe(0);

      // Control for the delivery ledger: the stream is closed and the session goes on talking here, each request
      // storing one more event, and never comes back for them: they count as stream_moved once the window has
      // passed. (An event written before the server noticed the close counts as delivered, the in-flight limit, so
      // the count is a lower bound; the replay above settling its events is checked in test/server/.)
      const judged = await server.undeliveredCounted('stream_moved', 1, () => session.callTool('emit', { count: 1 }));
      expect(sample(judged, undelivered, { reason: 'stream_moved' })).toBeGreaterThanOrEqual(1);
      for (const reason of ['no_listener', 'dropped', 'abandoned'])
        expect(sample(judged, undelivered, { reason })).toBe(0);
    },
    STARTUP_MS + 60_000,
  );

  test(
    'forked: without an event store the resume gets 200 and a fresh stream, and the server says ignored',
    async () => {
      const server = await startStack(stack, { eventStore: 'none' });
      const session = new RawMcpSession(server.url);
      await session.initialize();
      const first = await session.openGet();
      await session.callTool('emit', { count: 1 });
      await first.waitForMessages(1);
      expect(first.messages()[0]!.id).toBeUndefined(); // nothing to resume from: only a cursor from elsewhere
      first.close();
      await session.callTool('emit', { count: 2 }); // lost
      const { stream } = await resume(session, `_GET_stream_${Date.now()}_0000_abc`);
      expect(stream.status).toBe(200);
      await session.callTool('emit', { count: 1 });
      await stream.waitForMessages(1);
      stream.close();
      expect(stream.messages()).toHaveLength(1);

      await server.resumesCounted('ignored', 1);
      // Events emitted while no stream is open have nowhere to go: with no store they are dropped. The session goes on
      // talking, emitting more, until they count (one written before the server noticed a close counts as sent).
      const text = await server.undeliveredCounted('dropped', 2, () => session.callTool('emit', { count: 1 }));
      expect(sample(text, undelivered, { reason: 'dropped' })).toBeGreaterThanOrEqual(2);
      for (const reason of ['stream_moved', 'no_listener', 'abandoned'])
        expect(sample(text, undelivered, { reason })).toBe(0);
      expect(sample(text, resumes, { outcome: 'replayed' })).toBe(0);
      expect(sample(text, resumes, { outcome: 'unknown_cursor' })).toBe(0);
    },
    STARTUP_MS + 60_000,
  );
});

test(
  'mcp-proxy: a cursor its capped store already evicted is rejected (400), not replayed',
  async () => {
    const server = await startStack(stacks[0], { maxEvents: 2 });
    const session = new RawMcpSession(server.url);
    await session.initialize();
    const first = await session.openGet();
    await session.callTool('emit', { count: 4 });
    await first.waitForMessages(4);
    const oldest = first.messages()[0]!.id!;
    first.close();
    const { stream } = await resume(session, oldest);
    expect(stream.status).toBe(400);
    const text = await server.resumesCounted('rejected', 1);
    expect(sample(text, resumes, { outcome: 'replayed' })).toBe(0);
  },
  STARTUP_MS + 60_000,
);

test.each(['esm', 'cjs'] as const)(
  'mcp-handler, %s app: 2025-era traffic is served statelessly, a resume GET is answered 405 by the router: nothing to judge',
  async moduleSystem => {
    const server = await startStack(mcpHandler, { moduleSystem });
    await server.app.waitForStderr(PATCHED_SERVER, 10_000);
    const session = new RawMcpSession(server.url);
    await session.initialize();
    expect(session.sessionId).toBeUndefined(); // no session, so no session log to resume
    session.sessionId = 'any-session';
    const { stream } = await resume(session, `_GET_stream_${Date.now()}_0000_abc`);
    expect(stream.status).toBe(405);
    session.sessionId = undefined;
    expect(await session.callTool('emit', {})).toMatchObject({ content: [{ text: 'emitted' }] });
    const text = await server.metrics();
    for (const outcome of ['replayed', 'unknown_cursor', 'ignored', 'rejected', 'failed']) {
      expect(sample(text, resumes, { outcome })).toBe(0);
    }
  },
  STARTUP_MS + 60_000,
);
