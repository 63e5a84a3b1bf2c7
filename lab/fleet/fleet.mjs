/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Runs the fleet lab for one routing policy: N server replicas (real SDK, forkwatch) behind the router, M client
// sessions over a few client processes (real SDK, forkwatch), one control replica and one control client without
// forkwatch on the same workload (for CPU and memory with and without forkwatch in the same run), one client
// process that crashes, and optionally a real Prometheus scraping everything with the shipped rules.
// Returns the raw material for score.mjs. Every child is stopped by its pid on the way out.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRouter } from './router.mjs';
import { startStoreService } from './store-service.mjs';
import { startPrometheus } from './prometheus.mjs';
import { trackChild } from './children.mjs';
import { startHaproxy, startNginx, startRedis } from './real-parts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const sleep = ms => new Promise(r => setTimeout(r, ms));

/** Routing policy -> router policy, store, and the replica events during the run. */
export const POLICIES = {
  'sticky-shared': {
    router: 'sticky',
    store: 'shared',
    story: 'sticky by session, one shared event store: the healthy baseline',
  },
  'sticky-failover': {
    router: 'sticky',
    store: 'local',
    story: 'sticky by session, a store per replica; one replica crashes and its sessions fail over',
  },
  'round-robin': {
    router: 'round-robin',
    store: 'local',
    story: 'every request to the next replica, a store per replica',
  },
  'rolling-restart': {
    router: 'sticky',
    store: 'local',
    story: 'sticky by session, a store per replica; every replica restarted in turn',
  },
  // On the real parts: the reference deployment (deploy/) behind Debian's HAProxy or nginx, sessions registered in
  // Debian's Redis; the balancer's short idle timeout (below the SDK's 15 s keep-alive) cuts quiet streams.
  'haproxy-sticky-redis': {
    balancer: 'haproxy',
    balance: 'sticky',
    store: 'redis',
    story: 'HAProxy sticky on Mcp-Session-Id, events in Redis, idle streams cut by a 4 s timeout: healthy',
  },
  'haproxy-rolling-redis': {
    balancer: 'haproxy',
    balance: 'sticky',
    store: 'redis',
    replicaEvents: 'rolling',
    story: 'HAProxy sticky, Redis; every slot restarted through the runtime API (drain, SIGTERM, start)',
  },
  'haproxy-sigkill-redis': {
    balancer: 'haproxy',
    balance: 'sticky',
    store: 'redis',
    replicaEvents: 'sigkill',
    story: 'HAProxy sticky, Redis; replica s1 killed (SIGKILL) at 30%, a new one in its slot at 60%',
  },
  'haproxy-rr-redis': {
    balancer: 'haproxy',
    balance: 'round-robin',
    store: 'redis',
    story: 'HAProxy round-robin, sessions and events in Redis (split brain with a shared store)',
  },
  'haproxy-rr-local': {
    balancer: 'haproxy',
    balance: 'round-robin',
    store: 'local',
    story: 'HAProxy round-robin, sessions in Redis, an event store per replica (split brain)',
  },
  'nginx-hash-redis': {
    balancer: 'nginx',
    balance: 'sticky',
    store: 'redis',
    story: 'nginx `hash $http_mcp_session_id consistent`, Redis, idle streams cut by a 4 s timeout: healthy',
  },
  'nginx-rr-redis': {
    balancer: 'nginx',
    balance: 'round-robin',
    store: 'redis',
    story: 'nginx round-robin, sessions and events in Redis (split brain with a shared store)',
  },
};

/** The short idle timeout of the real-parts policies: below the SDK's 15 s keep-alive, so quiet streams are cut. */
export const SHORT_STREAM_TIMEOUT = '4s';

/** Spawns a fleet process and resolves once it prints `<marker> <port>`. */
function spawnProcess(file, envName, config, marker, onLine) {
  const child = spawn(process.execPath, ['--expose-gc', join(here, file)], {
    cwd: root,
    env: { ...process.env, [envName]: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child);
  let stderr = '';
  child.stderr.on('data', c => (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise(resolve => child.once('exit', code => resolve(code)));
  const ready = new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${file} did not start:\n${stderr}`)), 240_000);
    child.stdout.on('data', chunk => {
      out += chunk;
      const lines = out.split('\n');
      out = lines.pop();
      for (const line of lines) {
        const m = new RegExp(`^${marker} (\\d+)`).exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
        onLine?.(line);
      }
    });
    child.once('exit', code => {
      clearTimeout(timer);
      reject(new Error(`${file} exited with ${code} before it was ready:\n${stderr}`));
    });
  });
  return {
    child,
    ready,
    exited,
    stderr: () => stderr,
    stop: () => child.kill('SIGTERM'),
    kill: () => child.kill('SIGKILL'),
  };
}

async function startReplica(name, config) {
  const file = config.redisUrl ? 'replica.cjs' : 'server.cjs';
  const proc = spawnProcess(file, 'FLEET_SERVER', { name, ...config }, 'LISTENING');
  const port = await proc.ready;
  const url = `http://127.0.0.1:${port}`;
  return {
    name,
    url,
    proc,
    async report() {
      return (await fetch(`${url}/__fleet/report`)).json();
    },
  };
}

/**
 * options: policy, servers (3), sessions (200), clients (4), rounds (4), soakMs (0: one pass of sessions),
 * prometheus (true), verdictTimeoutMs (3000), onProgress (line => void)
 */
export async function runFleet(options = {}) {
  // The delivery ledger's window: 10 s, three times the slowest reconnect of the workload (its default is 30 s, for
  // the SDK's default reconnect schedule; sessions here end sooner than that).
  const o = {
    policy: 'sticky-shared',
    servers: 3,
    sessions: 200,
    clients: 4,
    rounds: 4,
    soakMs: 0,
    prometheus: true,
    crash: true,
    verdictTimeoutMs: 10000,
    deliveryWindowMs: 10_000,
    ...options,
  };
  const policy = POLICIES[o.policy];
  if (!policy) throw new Error(`unknown policy ${o.policy}; known: ${Object.keys(POLICIES)}`);
  const real = Boolean(policy.balancer);
  const progress = o.onProgress ?? (() => {});
  const work = mkdtempSync(join(tmpdir(), 'fleet-'));
  const replicas = new Map();
  const retired = []; // reports of replicas taken out during the run
  const clients = [];
  const events = [];
  let store;
  let router;
  let redis;
  let balancer;
  const slots = new Map(); // balancer server slot -> name of the replica process in it (real parts)
  let prometheus;
  let control;
  const startedAt = Date.now();
  const note = text => {
    events.push({ atMs: Date.now() - startedAt, text });
    progress(text);
  };
  try {
    if (!real) router = await startRouter({ policy: policy.router });
    if (policy.store === 'shared') store = await startStoreService();
    if (real) redis = await startRedis({ track: trackChild });
    const serverConfig = real
      ? {
          store: policy.store,
          redisUrl: redis.url,
          deliveryWindowMs: o.deliveryWindowMs,
          // forkwatch keeps the fleet's delivery marks in Redis (issue 49; a log per replica too), unless told not to.
          fleetMarks: !o.judgeAlone && o.fleetMarks !== false,
          // The replicas know their store is shared (forkwatch's sharedEventStore), unless the run judges alone.
          instrumentationConfig: {
            sharedEventStore: policy.store === 'redis' && !o.judgeAlone,
            ...o.instrumentationConfig,
          },
        }
      : { store: policy.store, storeUrl: store?.url, deliveryWindowMs: o.deliveryWindowMs };
    if (o.prometheus) {
      prometheus = await startPrometheus({
        track: trackChild,
        ruleFiles: [
          join(root, 'alerts', 'forkwatch-recording.rules.yml'),
          join(root, 'alerts', 'forkwatch-alerts.rules.yml'),
        ],
      });
    }
    const targets = () => [
      ...[...replicas.values()].map(r => ({ address: new URL(r.url).host, job: 'fleet-server', instance: r.name })),
      ...clients
        .filter(c => c.metricsPort && c.telemetry && !c.crashed)
        .map(c => ({ address: `127.0.0.1:${c.metricsPort}`, job: 'fleet-client', instance: c.name })),
    ];
    const publishTargets = () => prometheus?.setTargets(targets());

    const addReplica = async name => {
      const r = await startReplica(name, serverConfig);
      replicas.set(name, r);
      router?.setReplica(name, r.url);
      publishTargets();
      return r;
    };
    const retire = async (name, how) => {
      const r = replicas.get(name);
      router?.removeReplica(name); // the load balancer drains it first
      replicas.delete(name);
      try {
        retired.push(await r.report());
      } catch (error) {
        note(`report of ${name} failed: ${error.message}`);
      }
      if (how === 'crash') r.proc.kill();
      else r.proc.stop();
      await r.proc.exited;
      publishTargets();
    };

    const replicaCount = real ? 3 : o.servers; // the reference configs have three server slots
    await Promise.all(Array.from({ length: replicaCount }, (_, i) => addReplica(`s${i + 1}`)));
    control = await startReplica('control', { ...serverConfig, telemetry: false });
    if (real) {
      const addresses = Object.fromEntries([...replicas.values()].map(r => [r.name, new URL(r.url).host]));
      for (const name of replicas.keys()) slots.set(name, name);
      const start = policy.balancer === 'haproxy' ? startHaproxy : startNginx;
      balancer = await start({
        servers: addresses,
        policy: policy.balance,
        balance: policy.balance,
        streamTimeout: SHORT_STREAM_TIMEOUT,
        track: trackChild,
      });
      if (balancer.waitServer) for (const slot of slots.keys()) await balancer.waitServer(slot, 'UP');
      note(`${policy.balancer} (pid ${balancer.pid}) and redis (pid ${redis.pid}) up, ${policy.balance}`);
    } else router.setControl(control.url);
    note(
      `${replicaCount} replicas and a control replica up (${policy.store} store, ${policy.router ?? policy.balance} routing)`,
    );
    const frontUrl = real ? balancer.url : router.url;

    const perClient = Math.max(1, Math.round(o.sessions / o.clients));
    const goFile = join(work, 'go');
    const startClient = (name, extra) => {
      const reportFile = join(work, `${name}.json`);
      const crashedSessions = [];
      const config = {
        name,
        routerUrl: frontUrl,
        balancer: real,
        sessions: perClient,
        rounds: o.rounds,
        seed: clients.length + 1,
        verdictTimeoutMs: o.verdictTimeoutMs,
        soakMs: o.soakMs,
        goFile,
        reportFile,
        ...extra,
      };
      const c = { name, telemetry: config.telemetry !== false, reportFile, crashedSessions, done: false, resumes: 0 };
      c.proc = spawnProcess('client.cjs', 'FLEET_CLIENT', config, 'METRICS', line => {
        if (line.startsWith('SESSION ')) crashedSessions.push(line.slice(8));
        if (line.startsWith('RESUMES ')) c.resumes = Number(line.slice(8));
        if (line === 'DONE') c.done = true;
      });
      clients.push(c);
      return c;
    };
    for (let i = 0; i < o.clients; i++) startClient(`c${i + 1}`, {});
    // The control client talks to the control replica through the router, or straight to it on the real parts.
    const _controlClient = startClient(
      'control',
      real ? { telemetry: false, routerUrl: control.url } : { telemetry: false, prefix: '/control' },
    );
    const crashy = startClient('crashy', {
      sessions: Math.max(4, Math.round(perClient / 4)),
      announce: true,
      rounds: 50,
    });
    const finishers = clients.filter(c => c !== crashy);
    for (const c of clients) c.metricsPort = await c.proc.ready;
    publishTargets();
    if (prometheus) await waitForScrapes(prometheus, targets().length);
    writeFileSync(goFile, '');
    const goAt = Date.now();
    note(
      `${clients.length} client processes started, go (${perClient} sessions each; the crash victim ${Math.max(4, Math.round(perClient / 4))})`,
    );

    // Replica and client events happen at fractions of the run's progress: of the soak's time, or of the resumes
    // a pass of sessions is expected to make (about 0.6 per session and round), so a slow machine stretches them.
    // On the real parts about half of the rounds' idle pauses outlast the balancer's timeout.
    const expectedResumes = o.sessions * o.rounds * (real ? 0.45 : 0.6);
    const deadline = Date.now() + o.soakMs + 15 * 60_000; // every wait below is bounded by it
    const resumesSoFar = () =>
      real ? clients.filter(c => c.telemetry).reduce((n, c) => n + c.resumes, 0) : router.totals.resumes;
    const progress = () => (o.soakMs ? (Date.now() - goAt) / o.soakMs : resumesSoFar() / expectedResumes);
    const schedule = [];
    const crash = async () => {
      // Crash with sessions open: wait (bounded) until most of the victim's sessions are connected.
      const victims = Math.max(4, Math.round(perClient / 4));
      for (let i = 0; i < 240 && crashy.crashedSessions.length < victims * 0.75; i++) await sleep(250);
      crashy.proc.kill();
      crashy.crashed = true; // and gone from service discovery, as a dead pod is
      publishTargets();
      note(`client process crashy killed (SIGKILL) with ${crashy.crashedSessions.length} sessions open`);
    };
    if (o.crash) schedule.push({ at: 0.4, run: crash });
    else crashy.proc.kill();
    if (o.policy === 'sticky-failover') {
      schedule.push({
        at: 0.3,
        run: async () => {
          await retire('s1', 'crash');
          note('replica s1 crashed (SIGKILL); its sessions fail over');
        },
      });
      schedule.push({
        at: 0.6,
        run: async () => {
          await addReplica('s1b');
          note('replica s1b started in its place');
        },
      });
    }
    if (o.policy === 'rolling-restart') {
      const names = [...replicas.keys()];
      names.forEach((name, i) => {
        schedule.push({
          at: 0.2 + (0.6 * i) / names.length,
          run: async () => {
            // Surge first, as a Deployment's rolling update does: the new replica is ready before the old one goes.
            await addReplica(`${name}b`);
            await retire(name, 'restart');
            note(`replica ${name} replaced by ${name}b (SIGTERM)`);
          },
        });
      });
    }
    // Real parts: a slot's process is replaced through the balancer's runtime API (HAProxy's admin socket).
    const replaceInSlot = async (slot, how) => {
      const old = slots.get(slot);
      if (how === 'restart') {
        await balancer.admin(`set server ${policy.balance}/${slot} state drain`);
        await sleep(1000); // new sessions go elsewhere; sticky ones still come here until the process goes
      }
      await retire(old, how === 'restart' ? 'restart' : 'crash');
      if (how === 'crash') return;
      await startInSlot(slot);
    };
    const startInSlot = async slot => {
      const name = `${slots.get(slot)}b`;
      const r = await addReplica(name);
      const { hostname, port } = new URL(r.url);
      slots.set(slot, name);
      await balancer.admin(`set server ${policy.balance}/${slot} addr ${hostname} port ${port}`);
      await balancer.admin(`set server ${policy.balance}/${slot} state ready`);
      await balancer.waitServer(slot, 'UP');
    };
    if (policy.replicaEvents === 'rolling') {
      [...slots.keys()].forEach((slot, i, all) => {
        schedule.push({
          at: 0.2 + (0.6 * i) / all.length,
          run: async () => {
            await replaceInSlot(slot, 'restart');
            note(`slot ${slot}: drained, SIGTERM, ${slots.get(slot)} started in its place (runtime API)`);
          },
        });
      });
    }
    if (policy.replicaEvents === 'sigkill') {
      schedule.push({
        at: 0.3,
        run: async () => {
          await replaceInSlot('s1', 'crash');
          note('replica s1 killed (SIGKILL); HAProxy marks it DOWN after its health checks fail');
        },
      });
      schedule.push({
        at: 0.6,
        run: async () => {
          await startInSlot('s1');
          note(`${slots.get('s1')} started in slot s1 (runtime API: addr, ready)`);
        },
      });
    }
    const scheduled = (async () => {
      for (const step of schedule.sort((a, b) => a.at - b.at)) {
        // Bounded: every step waits at most the run's deadline.
        while (progress() < step.at && !finishers.every(c => c.done) && Date.now() < deadline) await sleep(100);
        await step.run();
      }
    })();

    // Wait for the clients that do not crash (bounded). A soak samples the series count every minute.
    const seriesSamples = [];
    let nextSeriesSample = Date.now() + 30_000;
    while (!finishers.every(c => c.done)) {
      if (prometheus && o.soakMs && Date.now() > nextSeriesSample) {
        nextSeriesSample += 60_000;
        const series = await prometheus.query('count by (job) ({__name__=~"forkwatch_.*"})').catch(() => []);
        seriesSamples.push({
          atMs: Date.now() - goAt,
          ...Object.fromEntries(series.map(r => [r.metric.job, Number(r.value[1])])),
        });
      }
      if (Date.now() > deadline) throw new Error('fleet clients did not finish in time');
      const dead = finishers.find(c => !c.done && c.proc.child.exitCode !== null);
      if (dead) throw new Error(`client ${dead.name} exited: ${dead.proc.stderr()}`);
      await sleep(250);
    }
    await scheduled;
    await crashy.proc.exited;
    note('all sessions done');

    // Pending events of sessions that closed elsewhere are judged a window after their last activity here.
    await sleep(o.deliveryWindowMs + 2000);
    let alerts;
    if (prometheus) {
      // From 3 s after go: rules evaluated before the first scrapes (absent metrics) do not count.
      alerts = await prometheusVerdicts(
        prometheus,
        Math.max(1, Math.floor((Date.now() - goAt) / 1000) - 3),
        seriesSamples,
      );
    }
    const servers = [...retired];
    for (const r of replicas.values()) servers.push(await r.report());
    const controlServer = await control.report();
    const clientReports = finishers.map(c => JSON.parse(readFileSync(c.reportFile, 'utf8')));
    const routing = real
      ? routingSeen(clientReports, servers)
      : { totals: router.totals, counts: Object.fromEntries(router.counts) };
    return {
      policy: o.policy,
      story: policy.story,
      options: {
        servers: o.servers,
        sessions: o.sessions,
        clients: o.clients,
        rounds: o.rounds,
        soakMs: o.soakMs,
        verdictTimeoutMs: o.verdictTimeoutMs,
        deliveryWindowMs: o.deliveryWindowMs,
        judgeAlone: Boolean(o.judgeAlone),
        fleetMarks: o.fleetMarks !== false,
      },
      durationMs: Date.now() - startedAt,
      events,
      router: routing,
      balancer: real ? { kind: policy.balancer, balance: policy.balance, streamTimeout: SHORT_STREAM_TIMEOUT } : null,
      servers,
      controlServer,
      clients: clientReports.filter(c => c.telemetry),
      controlClient: clientReports.find(c => !c.telemetry),
      crashedSessions: o.crash ? crashy.crashedSessions : [],
      alerts,
    };
  } finally {
    for (const c of clients) c.proc.kill();
    for (const r of replicas.values()) r.proc.kill();
    control?.proc.kill();
    await router?.close();
    await balancer?.stop();
    await redis?.stop();
    await store?.close();
    await prometheus?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * What the router counts, from the real parts: each client session counted its own GETs (resumes, cursor-less
 * reconnects), and each replica the sessions that reached it.
 */
function routingSeen(clientReports, servers) {
  const counts = {};
  const of = session =>
    (counts[session] ??= { resumes: 0, cursorless: 0, duplicates: 0, failovers: 0, gets: 0, replicas: [] });
  for (const c of clientReports) {
    for (const s of c.sessions) {
      if (!s.session || !s.wire) continue;
      Object.assign(of(s.session), { resumes: s.wire.resumes, cursorless: s.wire.cursorless, gets: s.wire.gets });
    }
  }
  for (const server of servers)
    for (const session of Object.keys(server.served ?? {})) of(session).replicas.push(server.name);
  const totals = { requests: 0, resumes: 0, cursorless: 0, duplicates: 0, failovers: 0, errors: 0 };
  for (const c of Object.values(counts)) {
    totals.resumes += c.resumes;
    totals.cursorless += c.cursorless;
  }
  return { totals, counts };
}

/** Waits (bounded) until Prometheus scraped every target once: alerts are judged from the start of the sessions. */
async function waitForScrapes(prometheus, count) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const active = await prometheus.activeTargets();
    if (active.length >= count && active.every(t => t.health === 'up')) return;
    await sleep(250);
  }
}

/** Every alert that was pending or firing at any time of the run, with its peak state, and the final series count. */
async function prometheusVerdicts(prometheus, rangeSeconds, seriesSamples) {
  const alerts = {};
  for (const r of await prometheus.query(`max_over_time(ALERTS[${rangeSeconds}s])`)) {
    const key = `${r.metric.alertname}${r.metric.severity ? ` (${r.metric.severity})` : ''}`;
    const state = r.metric.alertstate;
    if (!alerts[key] || state === 'firing') alerts[key] = state;
  }
  const up = await prometheus.query('count by (job) (up == 1)');
  const series = await prometheus.query('count by (job) ({__name__=~"forkwatch_.*"})');
  return {
    alerts,
    seriesSamples,
    up: Object.fromEntries(up.map(r => [r.metric.job, Number(r.value[1])])),
    series: Object.fromEntries(series.map(r => [r.metric.job, Number(r.value[1])])),
  };
}
