/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The reference deployment's runnable replica (deploy/server.cjs) on Debian's Redis: two replicas, a session
 * initialized on one and served by the other (hydrated from the registry), its notification stored in Redis and
 * replayed by a resume on the first; the health check answers 200 with `Host: localhost` and 403 without an allowed
 * Host; SIGTERM drains and exits. The fleet lab runs the rest of deploy/ (the replica module, the store, the
 * HAProxy and nginx configs); the Kubernetes snippet parses.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { leasePort, startRedis } from '../../lab/fleet/real-parts.mjs';

const root = join(__dirname, '../..');
const children: ChildProcess[] = [];
let redis: { url: string; stop(): Promise<void> };
const ports: number[] = [];

async function startServer(): Promise<number> {
  const port: number = await leasePort();
  const child = spawn(process.execPath, [join(root, 'deploy/server.cjs')], {
    env: { ...process.env, PORT: String(port), REDIS_URL: redis.url },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('deploy/server.cjs did not start')), 60_000);
    child.stderr!.on('data', chunk => {
      if (String(chunk).includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', code => reject(new Error(`deploy/server.cjs exited with ${code}`)));
  });
  return port;
}

/** A raw HTTP request (fetch cannot set Host). */
function raw(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, res => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end();
  });
}

const mcp = (port: number, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  redis = await startRedis();
  ports.push(await startServer(), await startServer());
}, 120_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await redis?.stop();
});

describe('deploy/server.cjs on Redis', () => {
  test('health check: 200 with Host localhost, 403 with a Host the DNS-rebinding check does not allow', async () => {
    expect(await raw(ports[0]!, '/healthz', { host: 'localhost' })).toBe(200);
    expect(await raw(ports[0]!, '/healthz', { host: 'evil.example' })).toBe(403);
  });

  test('a session initialized on one replica is served by the other, and its event is replayed from Redis', async () => {
    const [a, b] = ports as [number, number];
    const init = await mcp(a, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    const h = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    expect((await mcp(b, { jsonrpc: '2.0', method: 'notifications/initialized' }, h)).status).toBe(202);
    const notify = (port: number, id: number, text: string) =>
      mcp(port, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'notify', arguments: { text } } }, h);
    /** Reads SSE text from a GET until it contains `marker` (bounded), then cancels it. */
    const readUntil = async (res: Response, marker: string) => {
      const reader = res.body!.getReader();
      let text = '';
      const deadline = Date.now() + 10_000;
      while (!text.includes(marker) && Date.now() < deadline) {
        const next = await Promise.race([reader.read(), new Promise<undefined>(r => setTimeout(r, 500))]);
        if (next && !next.done) text += new TextDecoder().decode(next.value);
      }
      await reader.cancel();
      return text;
    };
    const get = (port: number, extra: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${port}/mcp`, { headers: { accept: 'text/event-stream', ...h, ...extra } });
    // The standalone stream on A carries a first notification: the client's cursor.
    const stream = await get(a);
    expect(await (await notify(a, 2, 'first')).text()).toContain('sent');
    const first = await readUntil(stream, '"first"');
    const cursor = /id: (\d+)\ndata: [^\n]*"first"/.exec(first)?.[1];
    expect(cursor).toMatch(/^\d+$/);
    // The stream drops; the next notification is sent by B, which holds no connection for it: Redis keeps it.
    expect(await (await notify(b, 3, 'hi')).text()).toContain('sent');
    // The client resumes on A from its cursor and gets it from Redis.
    const resumed = await get(a, { 'last-event-id': cursor! });
    expect(resumed.status).toBe(200);
    expect(await readUntil(resumed, '"hi"')).toContain('"hi"');
    // An id this session never issued is refused (400), never answered with an empty stream.
    const unknown = await fetch(`http://127.0.0.1:${a}/mcp`, {
      headers: { accept: 'text/event-stream', ...h, 'last-event-id': '999' },
    });
    expect(unknown.status).toBe(400);
  });

  test('SIGTERM: the replica exits', async () => {
    const child = children[1]!;
    const exited = new Promise(resolve => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test('the Kubernetes snippet parses: a Deployment of 3 with readiness on /healthz (Host localhost), Redis', () => {
    const docs = parseAllDocuments(readFileSync(join(root, 'deploy/kubernetes/mcp.yaml'), 'utf8')).map(d => d.toJS());
    const mcpDeployment = docs.find(d => d.kind === 'Deployment' && d.metadata.name === 'mcp');
    expect(mcpDeployment.spec.replicas).toBe(3);
    const container = mcpDeployment.spec.template.spec.containers[0];
    expect(container.readinessProbe.httpGet).toMatchObject({
      path: '/healthz',
      httpHeaders: [{ name: 'Host', value: 'localhost' }],
    });
    expect(container.env).toContainEqual({ name: 'FORKWATCH_SHARED_EVENT_STORE', value: 'true' });
    expect(docs.some(d => d.kind === 'Deployment' && d.metadata.name === 'mcp-redis')).toBe(true);
  });
});
