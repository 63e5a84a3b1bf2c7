/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// How long a replica of the reference deployment holds the SSE stream of a client that died, measured from outside:
// deploy/server.cjs on Debian's Redis behind Debian's HAProxy or nginx (deploy/ configs, or their controls), a
// client process (client.cjs) that opens the session's standalone GET stream, gets one event on it and is then
// SIGKILLed (the kernel closes its socket). From the kill on, the same session resumes from that event through the
// balancer every `pollMs`: the SDK answers 409 while the replica still holds the old stream, 200 once it let go. The
// hold is the time from the kill to the sending of the first resume answered 200.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trackChild } from '../fleet/children.mjs';
import { leasePort, startHaproxy, startNginx, startRedis } from '../fleet/real-parts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const sleep = ms => new Promise(r => setTimeout(r, ms));

/** Spawns deploy/server.cjs (no forkwatch: the hold is the SDK's and the balancer's) and waits until it listens. */
async function startReplica(redisUrl, keepAliveMs) {
  const port = await leasePort();
  const child = spawn(process.execPath, [join(root, 'deploy/server.cjs')], {
    env: {
      ...process.env,
      PORT: String(port),
      REDIS_URL: redisUrl,
      SSE_KEEP_ALIVE_MS: String(keepAliveMs),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  trackChild(child);
  const exited = new Promise(resolve => child.once('exit', resolve));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('deploy/server.cjs did not start')), 60_000);
    child.stderr.on('data', chunk => {
      if (String(chunk).includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', code => reject(new Error(`deploy/server.cjs exited with ${code}`)));
  });
  return {
    address: `127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/**
 * Redis, one replica and a front. front: 'haproxy' (deploy/haproxy/haproxy.cfg; abortOnClose false: without its
 * `option abortonclose`), 'nginx' (deploy/nginx/nginx.conf; buffered: the buffering control) or 'none' (the replica
 * itself). keepAliveMs: the replica's SSE keep-alive (deploy/server.cjs's SSE_KEEP_ALIVE_MS).
 */
export async function startDeployment({
  front = 'haproxy',
  abortOnClose = true,
  buffered = false,
  keepAliveMs = 5000,
} = {}) {
  const parts = [];
  const stop = async () => {
    for (const p of parts.reverse()) await p.stop();
  };
  try {
    const redis = await startRedis({ track: trackChild });
    parts.push(redis);
    const replica = await startReplica(redis.url, keepAliveMs);
    parts.push(replica);
    const servers = { s1: replica.address, s2: replica.address, s3: replica.address };
    let url = `http://${replica.address}/mcp`;
    if (front === 'haproxy') {
      const haproxy = await startHaproxy({ servers, track: trackChild, abortOnClose });
      parts.push(haproxy);
      if (!(await haproxy.waitServer('s1', 'UP'))) throw new Error('HAProxy never saw s1 UP');
      url = `${haproxy.url}/mcp`;
    } else if (front === 'nginx') {
      const nginx = await startNginx({ servers, track: trackChild, buffered });
      parts.push(nginx);
      url = `${nginx.url}/mcp`;
    }
    return { url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Starts client.cjs on `url`; resolves with its session, cursor and a kill() that resolves once it is gone. */
async function startDyingClient(url) {
  const child = spawn(process.execPath, [join(here, 'client.cjs')], {
    env: { ...process.env, DEAD_STREAM_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child);
  let stderr = '';
  child.stderr.on('data', c => (stderr += c));
  const exited = new Promise(resolve => child.once('exit', resolve));
  const line = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`client: no cursor in 30 s\n${stderr}`)), 30_000);
    child.stdout.on('data', c => {
      out += c;
      const m = /^CURSOR (\S+) (\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    child.once('exit', code => reject(new Error(`client exited with ${code}\n${stderr}`)));
  });
  return {
    session: line[1],
    cursor: line[2],
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** One resume of `session` from `cursor`: its status (the body of a 200 is dropped at once). */
async function resume(url, session, cursor) {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
      'last-event-id': cursor,
    },
    signal: controller.signal,
  });
  controller.abort();
  return res.status;
}

/**
 * One client killed `killDelayMs` after its stream got its event, then resumes every `pollMs` (at most `maxMs`).
 * Returns { holdMs: when the first resume answered 200 was sent, after the kill (undefined: never in maxMs);
 * lastConflictMs: when the last resume answered 409 was sent (0: none), so the stream was released between the two;
 * conflicts: the 409s; statuses: any other answers }.
 */
export async function measureHold(url, { killDelayMs = 0, pollMs = 100, maxMs = 60_000 } = {}) {
  const client = await startDyingClient(url);
  await sleep(killDelayMs);
  await client.kill();
  const t0 = performance.now();
  let conflicts = 0;
  const statuses = [];
  let lastConflictMs = 0;
  while (performance.now() - t0 < maxMs) {
    // Timed when sent: a balancer that buffers may hold the 200's headers long after the replica accepted it.
    const sentMs = Math.round(performance.now() - t0);
    const status = await resume(url, client.session, client.cursor);
    if (status === 200) return { holdMs: sentMs, lastConflictMs, conflicts, statuses };
    if (status === 409) {
      conflicts++;
      lastConflictMs = sentMs;
    } else statuses.push(status);
    await sleep(pollMs);
  }
  return { holdMs: undefined, lastConflictMs, conflicts, statuses };
}
