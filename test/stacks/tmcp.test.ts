/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real tmcp server (tmcp 1.20 and its own HttpTransport from @tmcp/transport-http 0.9, pinned in
 * test/sdk-versions/tmcp; ESM only, no @modelcontextprotocol package) preloaded with `forkwatch/register` counts what
 * its design does on its own /metrics: a resume it cannot honour (`ignored`: no event store, Last-Event-ID never
 * read) and a session id it never issued answered with a fresh stream (revived, `empty`). Healthy traffic counts
 * neither.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { RawMcpSession } from '../support/raw-mcp-session';
import { sample } from '../support/scrape';
import { STARTUP_MS, nonZero, root, startStackServer } from './stack-server';

const resumes = METRICS.serverResumes.prometheusName;
const revived = METRICS.serverRevivedSessions.prometheusName;
const info = METRICS.instrumentationInfo.prometheusName;
const SCRIPT = 'lab/stacks/tmcp-server.mjs';

const TEST_MS = STARTUP_MS + 60_000;

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
});
