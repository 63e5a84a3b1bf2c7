/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Where Debian's HAProxy with the reference config (deploy/haproxy/haproxy.cfg, backend `sticky`) sends a session's
 * requests once its server is gone (a rolling restart's stopped replica, a killed one not yet marked DOWN): all to one
 * replica. The SDK delivers an event live only to a stream registered in the process that stores it, so a session
 * whose GET resume and tool call land on two replicas loses the call's events until a later resume (the fleet lab's
 * `haproxy-rolling-redis` lost 3 events that way in a fresh-clone CI run, issue 47). The control renders the
 * config with the round-robin fallback it had before, which split every concurrent pair.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { trackChild } from '../../lab/fleet/children.mjs';
// @ts-expect-error: plain ESM module without types
import { startHaproxy } from '../../lab/fleet/real-parts.mjs';

const CONFIG = join(__dirname, '../../deploy/haproxy/haproxy.cfg');
const SESSIONS_ON_S1 = 20;

interface Replica {
  name: string;
  server: Server;
  address: string;
}

/** A stand-in replica on port 0: names itself, and hands out a session id on a request without one (initialize). */
async function replica(name: string): Promise<Replica> {
  let next = 0;
  const server = createServer((req, res) => {
    res.setHeader('x-replica', name);
    if (req.url === '/healthz') return res.end('ok');
    if (!req.headers['mcp-session-id']) res.setHeader('mcp-session-id', `${name}-${next++}-${process.pid}`);
    setTimeout(() => res.end(name), 20); // concurrent requests overlap, as a GET resume and a tool call do
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  return { name, server, address: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function failover(configFile: string) {
  const replicas = await Promise.all(['s1', 's2', 's3'].map(replica));
  cleanups.push(() => {
    for (const r of replicas) r.server.close();
  });
  const haproxy = await startHaproxy({
    servers: Object.fromEntries(replicas.map(r => [r.name, r.address])),
    policy: 'sticky',
    configFile,
    track: trackChild,
  });
  cleanups.push(() => haproxy.stop());
  for (const slot of ['s1', 's2', 's3']) expect(await haproxy.waitServer(slot, 'UP')).toBe(true);
  const send = async (session?: string) => {
    const res = await fetch(`${haproxy.url}/mcp`, { headers: session ? { 'mcp-session-id': session } : {} });
    await res.text();
    return { replica: res.headers.get('x-replica'), session: res.headers.get('mcp-session-id') };
  };

  // Initialize until enough sessions are pinned to s1 (the balancer learns each from the response header).
  const initializedOn = new Set<string>();
  const onS1: string[] = [];
  for (let i = 0; i < 200 && onS1.length < SESSIONS_ON_S1; i++) {
    const { replica, session } = await send();
    initializedOn.add(String(replica));
    if (replica === 's1' && session) onS1.push(session);
  }
  expect(onS1).toHaveLength(SESSIONS_ON_S1);
  for (const session of onS1) expect((await send(session)).replica).toBe('s1');

  // s1's process goes away (refused connections from now on); the health check has not marked it DOWN yet.
  const [s1] = replicas as [Replica, Replica, Replica];
  s1.server.close();
  s1.server.closeAllConnections();
  const pairs: string[][] = [];
  for (const session of onS1)
    pairs.push((await Promise.all([send(session), send(session)])).map(r => String(r.replica)));
  return { initializedOn, pairs };
}

describe('HAProxy with the reference config: a session whose server is gone', () => {
  it('has all its concurrent requests sent to one replica, and new sessions still spread', async () => {
    const { initializedOn, pairs } = await failover(CONFIG);
    expect(initializedOn.size).toBeGreaterThanOrEqual(2);
    expect(pairs.flat()).not.toContain('s1');
    expect(pairs.filter(([a, b]) => a !== b)).toEqual([]);
    // Sessions are hashed over both remaining replicas, not all piled onto one.
    expect(new Set(pairs.map(([a]) => a)).size).toBe(2);
  }, 60_000);

  it('control, the round-robin fallback the config had before: concurrent requests of a session split', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forkwatch-failover-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const hashed = '  balance hdr(mcp-session-id)\n  hash-type consistent\n';
    const config = readFileSync(CONFIG, 'utf8');
    expect(config).toContain(hashed);
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(file, config.replace(hashed, '  balance roundrobin\n'));
    const { pairs } = await failover(file);
    expect(pairs.flat()).not.toContain('s1');
    expect(pairs.filter(([a, b]) => a !== b).length).toBeGreaterThan(0);
  }, 60_000);
});
