/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The per-request fleet (protocol 2026-07-28): N replica processes (replica.cjs, forkwatch preloaded) behind
// Debian's HAProxy with deploy/haproxy/haproxy.cfg, backend `round-robin` (per-request MCP has no session to stick
// to), and client processes (client.cjs, forkwatch preloaded) sending healthy traffic through the balancer.
//
// Listen streams: the in-memory event bus reaches only the streams of its own process, so a publish is healthy only
// on the replica that holds the stream. The driver asks every replica how many listen streams it holds and
// publishes on those that hold one (a publish elsewhere is the loss forkwatch counts as `no_listener`).
//
// Cancellation: the reference config has `option abortonclose`, with which HAProxy closes the server side of a
// request when its client closes: the spec's cancellation reaches the handler. `abortOnClose: false` runs the same
// file without that line, the control: HAProxy 2.6 then keeps the server side open until the server answers (HTTP's
// half-close rule), so closing a 2026-07-28 response stream does not cancel the request behind it.
import { trackChild } from '../fleet/children.mjs';
import { startHaproxy } from '../fleet/real-parts.mjs';
import { spawnWithForkwatch, waitPatched } from './processes.mjs';
import { isExchange } from './score.mjs';

const sleep = ms => new Promise(r => setTimeout(r, ms));
/** The reference config has three server slots (s1, s2, s3). */
const SLOTS = ['s1', 's2', 's3'];

async function startReplica(name) {
  const proc = await spawnWithForkwatch('replica.cjs', 'FLEET_REPLICA', { name });
  const port = Number(await proc.line('LISTENING'));
  await waitPatched(proc, 'PerRequestHTTPServerTransport');
  const base = `http://127.0.0.1:${port}`;
  return {
    name,
    pid: proc.pid,
    address: `127.0.0.1:${port}`,
    metricsUrl: proc.metricsUrl,
    metrics: proc.metrics,
    async truth() {
      return (await fetch(`${base}/__fleet/truth`)).json();
    },
    async publish(count = 1) {
      return (await fetch(`${base}/__fleet/publish?count=${count}`, { method: 'POST' })).json();
    },
    stop: proc.stop,
  };
}

/**
 * HAProxy round-robin over the replicas, the reference config (or, abortOnClose false, the control without its
 * `option abortonclose`). With fewer than three replicas the spare slots repeat them (s3 = the first replica for
 * two), so the file is used unchanged.
 */
export async function startFront(replicas, { abortOnClose = true } = {}) {
  const servers = Object.fromEntries(SLOTS.map((slot, i) => [slot, replicas[i % replicas.length].address]));
  const haproxy = await startHaproxy({ servers, policy: 'round-robin', track: trackChild, abortOnClose });
  for (const slot of SLOTS) {
    if (!(await haproxy.waitServer(slot, 'UP'))) {
      await haproxy.stop();
      throw new Error(`HAProxy never saw ${slot} UP`);
    }
  }
  return { url: `${haproxy.url}/mcp`, pid: haproxy.pid, abortOnClose, stop: haproxy.stop };
}

/** Starts `replicas` (1 to 3) replica processes and one HAProxy front over them. */
export async function startPerRequestFleet({ replicas: count = 3, abortOnClose = true, onProgress = () => {} } = {}) {
  if (!(count >= 1 && count <= SLOTS.length)) throw new Error(`--replicas must be 1 to ${SLOTS.length}`);
  const replicas = [];
  let front;
  const stop = async () => {
    await front?.stop();
    await Promise.all(replicas.map(r => r.stop()));
  };
  try {
    const started = await Promise.allSettled(Array.from({ length: count }, (_, i) => startReplica(`r${i + 1}`)));
    for (const s of started) if (s.status === 'fulfilled') replicas.push(s.value);
    const failed = started.find(s => s.status === 'rejected');
    if (failed) throw failed.reason;
    front = await startFront(replicas, { abortOnClose });
    onProgress(
      `HAProxy (pid ${front.pid}${abortOnClose ? '' : ', without option abortonclose'}) round-robin over ` +
        replicas.map(r => `${r.name} (pid ${r.pid})`).join(', '),
    );
    return { url: front.url, front, replicas, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Every replica's scrape, by name. */
export async function scrapeReplicas(fleet) {
  const entries = await Promise.all(fleet.replicas.map(async r => [r.name, await r.metrics()]));
  return Object.fromEntries(entries);
}

export async function truthOfReplicas(fleet) {
  const entries = await Promise.all(fleet.replicas.map(async r => [r.name, await r.truth()]));
  return Object.fromEntries(entries);
}

const sumOf = (table, pred) => Object.entries(table).reduce((n, [k, v]) => n + (pred(k) ? v : 0), 0);

/**
 * Waits (bounded) until every exchange a replica received has ended at its HTTP layer (answered or closed) and no
 * tool handler runs: a handler that ignores its signal finishes after its exchange closed, and counts then.
 */
export async function settle(fleet, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const truths = Object.values(await truthOfReplicas(fleet));
    const open = truths.reduce(
      (n, t) =>
        n +
        sumOf(t.http.received, isExchange) -
        sumOf(t.http.finished, isExchange) -
        sumOf(t.http.closedEarly, isExchange),
      0,
    );
    if (open === 0 && truths.every(t => t.running === 0)) return;
    if (Date.now() > deadline) throw new Error(`${open} exchanges still open on the replicas`);
    await sleep(50);
  }
}

/**
 * Runs client processes through the balancer: configs are client.cjs's FLEET_CLIENT without `url`. While they run,
 * publishes every `publishEveryMs` on each replica that holds a listen stream. Returns each client's ground truth
 * and scrape, and the publishes made per replica.
 */
export async function runClients(fleet, configs, { publishEveryMs = 200, onProgress = () => {} } = {}) {
  const clients = [];
  const baseline = await truthOfReplicas(fleet);
  try {
    for (const config of configs) {
      clients.push({
        config,
        proc: await spawnWithForkwatch('client.cjs', 'FLEET_CLIENT', { ...config, url: fleet.url }),
      });
    }
    await Promise.all(clients.map(c => c.proc.line('READY')));
    await Promise.all(clients.map(c => waitPatched(c.proc, 'fetch')));
    // Every new listen stream subscribed on some replica before the first publish. Counted against the streams
    // already there: behind the reference config a closed listen stream stays subscribed on its replica (HAProxy
    // keeps the server side open), and a `notifications/cancelled` for it goes to whichever replica round-robin
    // picks, where a fresh per-request server knows nothing of it.
    const listening = configs.filter(c => c.listen !== false && c.mode !== 'abort-mid-stream').length;
    let holders = [];
    const deadline = Date.now() + 10_000;
    while (listening > 0) {
      const truths = await truthOfReplicas(fleet);
      const added = r => truths[r.name].listeners - baseline[r.name].listeners;
      holders = fleet.replicas.filter(r => added(r) > 0);
      const total = fleet.replicas.reduce((n, r) => n + added(r), 0);
      if (total === listening) break;
      if (Date.now() > deadline) throw new Error(`${total} of ${listening} listen streams subscribed`);
      await sleep(20);
    }
    onProgress(
      `${clients.length} clients connected, listen streams on ${holders.map(r => r.name).join(', ') || 'none'}`,
    );
    for (const c of clients) c.proc.send('GO');
    let running = true;
    const finished = Promise.all(clients.map(c => c.proc.line('ROUNDS-DONE', 3_600_000))).finally(() => {
      running = false;
    });
    finished.catch(() => {}); // awaited below; a client that dies must not be an unhandled rejection meanwhile
    let publishes = 0;
    if (holders.length > 0) {
      while (running) {
        await Promise.all(holders.map(r => r.publish(1)));
        publishes++;
        await Promise.race([sleep(publishEveryMs), finished]);
      }
    }
    await finished;
    for (const c of clients) c.proc.send(`FINISH ${publishes}`);
    const results = await Promise.all(
      clients.map(async c => ({
        name: c.config.name,
        truth: JSON.parse(await c.proc.line('DONE', 30_000)),
        metrics: await c.proc.metrics(),
      })),
    );
    return { clients: results, publishes, holders: holders.map(r => r.name) };
  } finally {
    await Promise.all(clients.map(c => c.proc.stop()));
  }
}
