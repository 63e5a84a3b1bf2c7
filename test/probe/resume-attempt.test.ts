/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * One resume attempt against scripted answers: the outcomes a real server can produce but the SDK fixtures
 * cannot all be made to (409 races, a wrong first frame, an id-less replay, EOF, an old id replayed).
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { McpHttp } from '../../src/cli/probe/mcp-http';
import { type ResumeTarget, checkBogusCursor, resumeOnce } from '../../src/cli/probe/resume';

type Script = (req: IncomingMessage, res: ServerResponse, call: number) => void;

let server: Server;
let url: URL;
let script: Script = () => undefined;
let calls = 0;
const lastEventIds: (string | undefined)[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    lastEventIds.push(req.headers['last-event-id'] as string | undefined);
    script(req, res, calls++);
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise(resolve => server.close(resolve));
});

const target: ResumeTarget = {
  cursor: 's:00000001',
  responseTo: 'ping-1',
  consumedUpToCursor: new Set(['s:00000001']),
};
const RESPONSE = JSON.stringify({ jsonrpc: '2.0', id: 'ping-1', result: {} });

function sse(res: ServerResponse, body: string, end = true): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(body);
  if (end) res.end();
}

async function attempt(s: Script, timeoutMs = 500) {
  script = s;
  calls = 0;
  lastEventIds.length = 0;
  return resumeOnce(new McpHttp(url, {}, timeoutMs), 'resume', 1, target);
}

describe('resumeOnce', () => {
  test('the replayed response as first frame: resumed, continuity verified by the dense sequence', async () => {
    const a = await attempt((_req, res) => sse(res, `id: s:00000002\ndata: ${RESPONSE}\n\n`));
    expect(a).toMatchObject({
      outcome: 'resumed',
      status: 200,
      firstEventId: 's:00000002',
      continuityVerified: true,
      conflictRetries: 0,
    });
    expect(lastEventIds).toEqual(['s:00000001']);
  });

  test('409 while the previous connection is still registered: retried, then resumed', async () => {
    const a = await attempt((_req, res, call) =>
      call < 2 ? res.writeHead(409).end('{}') : sse(res, `id: s:00000002\ndata: ${RESPONSE}\n\n`),
    );
    expect(a).toMatchObject({ outcome: 'resumed', conflictRetries: 2 });
  });

  test('409 until the step ends: rejected with 409', async () => {
    const a = await attempt((_req, res) => res.writeHead(409).end('{}'), 300);
    expect(a.outcome).toBe('rejected');
    expect(a.status).toBe(409);
    expect(a.conflictRetries).toBeGreaterThan(0);
  });

  test.each([
    [
      'another event of the same stream first',
      'wrong_first_frame',
      `id: s:00000003\ndata: {"jsonrpc":"2.0","method":"notifications/x"}\n\n`,
    ],
    ['the response without an id', 'id_missing', `data: ${RESPONSE}\n\n`],
    ['the cursor replayed again', 'id_reused', `id: s:00000001\ndata: \n\n`],
    ['an event of another stream', 'stream_changed', `id: other:00000002\ndata: ${RESPONSE}\n\n`],
    ['an older event of the stream', 'id_regressed', `id: s:00000000\ndata: ${RESPONSE}\n\n`],
  ])('%s: forked (%s)', async (_name, reason, body) => {
    const a = await attempt((_req, res) => sse(res, body));
    expect(a).toMatchObject({ outcome: 'forked', reason });
  });

  test('200 then end of stream: forked (eof_without_frames)', async () => {
    expect(await attempt((_req, res) => sse(res, ''))).toMatchObject({
      outcome: 'forked',
      reason: 'eof_without_frames',
    });
  });

  test('200 with keep-alives only: forked (no_frame) after the step timeout', async () => {
    const a = await attempt((_req, res) => sse(res, ': keepalive\n\n', false), 300);
    expect(a).toMatchObject({ outcome: 'forked', reason: 'no_frame' });
    expect(a.detail).toContain('1 keep-alive comments');
  });

  test('404 session not found: rejected, with the server message', async () => {
    const a = await attempt((_req, res) =>
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}'),
    );
    expect(a).toMatchObject({ outcome: 'rejected', status: 404, reason: 'http_404' });
    // The server's message is quoted: it is text the server chose.
    expect(a.detail).toBe('answered 404: "Session not found"');
  });
});

describe('checkBogusCursor', () => {
  const check = async (s: Script) => {
    script = s;
    calls = 0;
    return checkBogusCursor(new McpHttp(url, {}, 300), 'x:99999999', { stream: 'request', realCursor: 'x:00000001' });
  };

  test('4xx passes; 200 with a frame, 200 then EOF and 5xx fail', async () => {
    expect((await check((_req, res) => res.writeHead(400).end())).status).toBe('pass');
    const fresh = await check((_req, res) => sse(res, 'data: {"jsonrpc":"2.0","method":"n"}\n\n'));
    expect(fresh.status).toBe('fail');
    expect(fresh.detail).toMatch(/served a frame \(no id\)/);
    expect((await check((_req, res) => sse(res, ''))).detail).toMatch(/ended the stream/);
    expect((await check((_req, res) => res.writeHead(500).end())).detail).toMatch(/500.*not a 4xx/);
  });
});
