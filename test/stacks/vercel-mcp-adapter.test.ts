/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @vercel/mcp-adapter 1.0 (pinned in test/sdk-versions/vercel-mcp-adapter): the re-export of mcp-handler 1.x, whose
 * route handler builds a stateless WebStandardStreamableHTTPServerTransport of @modelcontextprotocol/sdk 1.x per
 * POST. No session, no event store, GET answered 405: nothing to resume, so forkwatch must be patched and say
 * nothing. One server process (ESM app, preloaded with `forkwatch/register`) for the file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { INFO_NONE, METRICS } from '../../src/shared/names';
import { startApp } from '../register/support';
import { freePort } from '../support/prometheus';
import { RawMcpSession } from '../support/raw-mcp-session';
import { sample } from '../support/scrape';

const root = join(__dirname, '../..');
const folder = join(root, 'test/sdk-versions/vercel-mcp-adapter');
const STARTUP_MS = 150_000; // import-in-the-middle reads the SDK's and mcp-handler's modules on a shared CPU

test('the app folder pins @vercel/mcp-adapter 1.0 on mcp-handler 1.x and @modelcontextprotocol/sdk 1.x', () => {
  const version = (pkg: string) =>
    JSON.parse(readFileSync(join(folder, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  expect(version('@vercel/mcp-adapter')).toMatch(/^1\.0\./);
  expect(version('mcp-handler')).toMatch(/^1\./);
  expect(version('@modelcontextprotocol/sdk')).toMatch(/^1\./);
});

test(
  'stateless: patched, a resume GET with Last-Event-ID is answered 405, tool calls with a kept session id work, and no resume, loss or revived session is counted',
  async () => {
    const port = await freePort();
    let metricsPort = await freePort();
    while (metricsPort === port) metricsPort = await freePort(); // the OS may hand the same free port out twice
    const app = startApp({
      cwd: folder,
      args: ['--import', join(root, 'build/src/register.js'), join(root, 'lab/stacks/mcp-handler-server.mjs')],
      env: {
        STACK_APP: folder,
        STACK_SERVER: JSON.stringify({ port, package: '@vercel/mcp-adapter' }),
        OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
        OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
        OTEL_LOG_LEVEL: 'debug',
      },
    });
    await app.waitForStderr(/STACK LISTENING/, STARTUP_MS);
    await app.waitForStderr(
      /patched WebStandardStreamableHTTPServerTransport of @modelcontextprotocol\/sdk@1\./,
      10_000,
    );

    const session = new RawMcpSession(`http://127.0.0.1:${port}/mcp`);
    await session.initialize();
    expect(session.sessionId).toBeUndefined(); // no session, so no session log to resume
    // A client that kept a session id from a stateful deployment sends it on every request: the stateless transport
    // validates none, serves them all, and that is no revived session (issue 45).
    session.sessionId = 'any-session';
    const resume = await session.openGet(`_GET_stream_${Date.now()}_0000_abc`);
    expect(resume.status).toBe(405);
    for (let i = 0; i < 3; i++)
      expect(await session.callTool('emit', {})).toMatchObject({ content: [{ text: 'emitted' }] });

    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const resumes = METRICS.serverResumes.prometheusName;
    for (const outcome of ['replayed', 'unknown_cursor', 'ignored', 'rejected', 'failed'])
      expect(sample(text, resumes, { outcome })).toBe(0);
    const undelivered = METRICS.serverUndeliveredEvents.prometheusName;
    for (const reason of ['stream_moved', 'no_listener', 'dropped', 'abandoned'])
      expect(sample(text, undelivered, { reason })).toBe(0);
    const revived = METRICS.serverRevivedSessions.prometheusName;
    for (const state of ['restored', 'empty']) expect(sample(text, revived, { state })).toBe(0);
    // Covered, not blind: the info series names the patched class, and the "nothing patched" series is 0.
    const info = METRICS.instrumentationInfo.prometheusName;
    expect(sample(text, info, { sdk_class: INFO_NONE })).toBe(0);
    expect(sample(text, info, { sdk_class: 'WebStandardStreamableHTTPServerTransport' })).toBe(1);
  },
  STARTUP_MS + 60_000,
);
