/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A client process of the fleet: many concurrent sessions of the real MCP SDK client (1.x, CommonJS), with
// forkwatch unless telemetry is off (the control client). Configured by FLEET_CLIENT (JSON):
//   name, routerUrl, prefix ('' or '/control'), sessions, rounds, seed, telemetry (default true),
//   verdictTimeoutMs, soakMs (keep `sessions` sessions running this long), goFile (start once it exists), announce (print
//   `SESSION <id>` per session: the crash victim's sessions), reportFile
// Each session numbers its events (emit {from, count}), suffers random cuts through the router (clean end, reset,
// mid-frame), sometimes emits during the gap, reconnects slowly (some sessions) and gets duplicate resumes
// (the router sends a copy). Ground truth: the events whose emit call succeeded against those received.
// With `balancer: true` (HAProxy or nginx in front, no router API) the faults are the balancer's own: each round
// is followed by an idle pause of 0.3-7 s, and the balancer's short idle timeout cuts the streams that stay quiet
// longer; the client counts its own GETs (resumes, cursor-less reconnects) through the transport's `fetch`.
// Serves GET /metrics and prints `METRICS <port>`; writes its report to reportFile and prints `DONE`, then waits to
// be stopped, so the last values can still be scraped.
const { createServer } = require('node:http');
const { existsSync, writeFileSync } = require('node:fs');
const path = require('node:path');
const { setupFleetTelemetry, ProcessMeter } = require('./telemetry.cjs');

const config = {
  name: 'C',
  prefix: '',
  sessions: 50,
  rounds: 4,
  seed: 1,
  telemetry: true,
  verdictTimeoutMs: 10000,
  ...JSON.parse(process.env.FLEET_CLIENT ?? '{}'),
};
const telemetry = config.telemetry
  ? setupFleetTelemetry({
      forkwatch: require(path.join(__dirname, '../../build/src/index.js')),
      instrumentationConfig: { verdictTimeoutMs: config.verdictTimeoutMs },
    })
  : undefined;
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { LoggingMessageNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');

// Deterministic per process (mulberry32), so a run can be repeated.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(config.seed);
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function waitFor(predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(25);
  }
  return false;
}
const api = async (p, body) => {
  const res = await fetch(
    `${config.routerUrl}/__fleet/${p}`,
    body ? { method: 'POST', body: JSON.stringify(body) } : undefined,
  );
  return res.json();
};

const meter = new ProcessMeter();
let open = 0;
let eventsReceived = 0;
const results = [];
let resumesTotal = 0; // resumes of every session so far (balancer mode)
const resumesSoFar = () => resumesTotal;
const FAULTS = ['none', 'clean', 'reset', 'midframe'];
/** The balancer's idle timeout in the real-parts policies (lab/fleet/fleet.mjs SHORT_STREAM_TIMEOUT), and a margin. */
const IDLE_CUT_MS = 4000 + 1000;

/** Wraps fetch for one session: counts its GETs and knows whether one of its SSE GET streams is open. */
function wireWatch() {
  const wire = { gets: 0, resumes: 0, cursorless: 0, open: 0 };
  const fetchFn = async (url, init) => {
    const res = await fetch(url, init);
    if ((init?.method ?? 'GET') !== 'GET') return res;
    const cursor = new Headers(init?.headers).get('last-event-id');
    if (cursor) {
      wire.resumes++;
      resumesTotal++;
    } else if (wire.gets > 0) wire.cursorless++;
    wire.gets++;
    if (!res.ok || !res.body || !String(res.headers.get('content-type')).includes('text/event-stream')) return res;
    wire.open++;
    let finished = false;
    const finish = () => {
      if (!finished) wire.open--;
      finished = true;
    };
    const reader = res.body.getReader();
    const body = new ReadableStream({
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) {
            finish();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          finish();
          controller.error(error);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return { wire, fetchFn };
}

async function runSession() {
  const slow = random() < 0.15;
  const delay = slow ? 1500 + Math.floor(random() * 1500) : 100 + Math.floor(random() * 100);
  const watch = config.balancer ? wireWatch() : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(`${config.routerUrl}${config.prefix}/mcp`), {
    ...(watch ? { fetch: watch.fetchFn } : {}),
    reconnectionOptions: {
      initialReconnectionDelay: delay,
      maxReconnectionDelay: delay,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 3,
    },
  });
  const client = new Client({ name: `fleet-${config.name}`, version: '1.0.0' });
  const received = new Map();
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
    eventsReceived++;
    const seq = n.params.data?.seq;
    received.set(seq, (received.get(seq) ?? 0) + 1);
  });
  client.onerror = () => {};
  const result = {
    session: undefined,
    slow,
    emitted: 0,
    unconfirmed: 0,
    lost: 0,
    duplicates: 0,
    cuts: {},
    duplicateResumes: 0,
    skippedCuts: 0,
    emitErrors: [],
    error: undefined,
    wire: watch?.wire,
  };
  const confirmed = [];
  let next = 1;
  open++;
  try {
    await client.connect(transport);
    result.session = transport.sessionId;
    if (config.announce) process.stdout.write(`SESSION ${result.session}\n`);
    const streamOpen = watch
      ? () => watch.wire.open > 0
      : async () => (await api(`open?session=${encodeURIComponent(result.session)}`)).open;
    // Events sent before the standalone stream exists are stored but never replayed: wait for it.
    await waitFor(streamOpen, 5000);
    const emit = async count => {
      const from = next;
      next += count;
      try {
        await client.callTool({ name: 'emit', arguments: { from, count } }, undefined, { timeout: 15000 });
        for (let i = 0; i < count; i++) confirmed.push(from + i);
      } catch (error) {
        result.unconfirmed += count;
        if (result.emitErrors.length < 3) result.emitErrors.push(String(error?.message ?? error).slice(0, 200));
      }
    };
    const allReceived = () => confirmed.every(s => received.has(s));
    for (let round = 0; round < config.rounds; round++) {
      const before = confirmed.length;
      await emit(3);
      // Carried: this round's events were confirmed and arrived (a timed-out emit proves nothing about the stream).
      const carried = confirmed.length > before && (await waitFor(allReceived, 1500));
      if (config.balancer) {
        // The balancer's idle timeout is the fault: a quiet stretch longer than it cuts the stream, and the
        // client resumes (after its reconnect delay) before the next round. The stretch ends once a resumed
        // stream opened (after an idle cut or a replica going away): a resumed stream left without a frame for a
        // whole idle timeout is cut again, the SDK then reconnects without its cursor (typescript-sdk #2499), and
        // an event written as that cut came is lost for real. The workload keeps that hazard out of the lossless
        // policies, as the router's cuts do below; forkwatch counts it where it happens (docs/fleet.md).
        const resumed = watch.wire.resumes;
        const quietUntil = Date.now() + 300 + Math.floor(random() * 6700);
        while (Date.now() < quietUntil && watch.wire.resumes === resumed) await sleep(50);
        if (watch.wire.resumes !== resumed && random() < 0.5) {
          // Half the time the resumed stream is left quiet on purpose until it is cut and the SDK reconnects: the
          // shape of #2499 without an event in flight (nothing is sent meanwhile), which forkwatch must name apart
          // from a fork (cursor_dropped_after_inconclusive, exposure) and never count as loss.
          // It ends on the next reconnect (a fresh stream: the next round's events reach it well within the
          // idle timeout), with or without the cursor.
          const { cursorless, resumes } = watch.wire;
          const until = Date.now() + IDLE_CUT_MS + delay + 2000;
          const reconnected = () => watch.wire.cursorless !== cursorless || watch.wire.resumes !== resumes;
          while (Date.now() < until && !reconnected()) await sleep(50);
        }
        await waitFor(streamOpen, delay + 2000);
        continue;
      }
      const fault = FAULTS[Math.floor(random() * FAULTS.length)];
      // Cut only a stream that carried this round's events: a resumed stream that breaks before its first event
      // makes the SDK reconnect without Last-Event-ID (SDK issue #2499), a loss forkwatch reports as
      // cursor_dropped; the workload keeps that hazard out of the healthy baseline.
      if (fault !== 'none' && !carried) result.skippedCuts++;
      else if (fault !== 'none') {
        const duplicate = random() < 0.1;
        result.cuts[fault] = (result.cuts[fault] ?? 0) + 1;
        if (duplicate) result.duplicateResumes++;
        await api('cut', { session: result.session, how: fault, duplicate });
        if (random() < 0.6) await emit(2); // sent while the client is away: the resume must replay them
        await waitFor(allReceived, delay + 2500);
        await waitFor(streamOpen, delay + 2000);
      }
      await sleep(50 + Math.floor(random() * 150));
    }
    // A last event, so the final resumed stream carries a frame before the session closes (a resume closed before
    // its first frame is `inconclusive`, which the client SLO counts as bad).
    await emit(1);
    // Longer than a slow client's reconnect delay: the last event may come in the replay of a resume.
    await waitFor(allReceived, delay + 2500);
  } catch (error) {
    result.error = String(error?.message ?? error);
  } finally {
    open--;
    result.emitted = confirmed.length;
    result.lost = confirmed.filter(s => !received.has(s)).length;
    result.duplicates = [...received.values()].filter(n => n > 1).length;
    await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
  results.push(result);
}

async function main() {
  const server = createServer(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(telemetry ? await telemetry.scrape() : '');
  });
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  meter.start();
  setInterval(() => meter.sample(open), 5000).unref();
  process.stdout.write(`METRICS ${server.address().port}\n`);
  // Progress for the fleet's schedule when no router counts resumes: this process's resumes so far.
  if (config.balancer) setInterval(() => process.stdout.write(`RESUMES ${resumesSoFar()}\n`), 1000).unref();
  // Every client process starts its sessions together, once the fleet says go (the file appears; bounded wait).
  if (config.goFile) {
    const deadline = Date.now() + 180_000;
    while (!existsSync(config.goFile) && Date.now() < deadline) await sleep(50);
  }
  const untilMs = config.soakMs ? Date.now() + config.soakMs : undefined;
  if (untilMs) {
    // Soak: `sessions` workers, each running sessions back to back until the deadline.
    await Promise.all(
      Array.from({ length: config.sessions }, async (_, i) => {
        await sleep(Math.floor((i / config.sessions) * 2000));
        while (Date.now() < untilMs) await runSession();
      }),
    );
  } else {
    await Promise.all(
      Array.from({ length: config.sessions }, async (_, i) => {
        await sleep(Math.floor((i / config.sessions) * 2000)); // staggered starts, not a thundering herd
        await runSession();
      }),
    );
  }
  const signals = telemetry?.signals;
  const report = {
    name: config.name,
    telemetry: config.telemetry,
    sessions: results,
    signals: signals ? Object.fromEntries(signals.sessions) : {},
    latencyMs: signals?.latency.values ?? [],
    process: meter.report(eventsReceived),
    metrics: telemetry ? await telemetry.scrape() : '',
  };
  writeFileSync(config.reportFile, JSON.stringify(report));
  process.stdout.write('DONE\n');
}
main().catch(error => {
  process.stderr.write(`fleet client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
process.on('SIGTERM', () => process.exit(0));
