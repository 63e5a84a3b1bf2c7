/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Runs a list of matrix cells one after another and writes their records (MATRIX_WORKER: { cells, out }).
// The app is this process: the real SDK 1.32.2 client, instrumented by forkwatch on the real OpenTelemetry SDK
// (lab/telemetry.cjs). The servers are child processes (lab/matrix/server.mjs), two per deployment kind (a fleet
// with a shared store, told sharedEventStore, and one with a store per process) behind the lab's cutting proxy,
// and a spare each, started ahead, to take the origin's place on a restart or a SIGKILL. Cells run one at a time
// on a pair, so each cell's counts are the deltas of the scrapes before and after it; what the servers sent comes
// from their stdout, so a killed process loses none of it.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cellName } from './cells.mjs';
import { startProxy } from '../proxy.mjs';
import { parseScrape, delta } from './oracle.mjs';
import { startStoreService } from './store.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { setupTelemetry } = require('../telemetry.cjs');
const { forkwatchEntry } = require('../server-app.cjs');

export const TIMING = {
  verdictTimeoutMs: 600,
  deliveryWindowMs: 400,
  reconnectMs: 250,
  framelessCutMs: 500,
};

const { cells, out } = JSON.parse(process.env.MATRIX_WORKER ?? '{}');
const telemetry = setupTelemetry({
  forkwatch: require(forkwatchEntry('cjs')),
  instrumentationConfig: { verdictTimeoutMs: TIMING.verdictTimeoutMs },
});
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { LoggingMessageNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');

const sleep = ms => new Promise(r => setTimeout(r, ms));
const storeService = await startStoreService();
const sent = new Map(); // cell id -> keys
const writtenLive = new Map(); // cell id -> keys a store-less process wrote to a connected standalone stream
const stored = new Map(); // cell id -> { key, log, eventId }
let processes = 0;

const bucket = (map, id) => {
  let list = map.get(id);
  if (!list) {
    list = [];
    map.set(id, list);
  }
  return list;
};

/** A server child on port 0; resolves once it reports its port. */
function startServer(shared) {
  const tag = `P${++processes}`;
  const child = spawn(process.execPath, [join(here, 'server.mjs')], {
    env: {
      ...process.env,
      MATRIX_SERVER: JSON.stringify({
        tag,
        shared,
        storeUrl: storeService.url,
        deliveryWindowMs: TIMING.deliveryWindowMs,
      }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('matrix server did not start within 60 s')), 60_000);
    child.once('exit', code => reject(new Error(`matrix server exited with ${code}`)));
    child.stdout.on('data', chunk => {
      buffer += chunk;
      let nl = buffer.indexOf('\n');
      while (nl !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
        const [word, cellId, rest, how] = line.split(' ');
        if (word === 'SENT') {
          bucket(sent, cellId).push(rest);
          if (how === 'live') bucket(writtenLive, cellId).push(rest);
        } else if (word === 'STORED')
          bucket(stored, cellId).push(JSON.parse(line.slice(word.length + cellId.length + 2)));
        else if (word === 'LISTENING') {
          clearTimeout(timer);
          const url = `http://127.0.0.1:${cellId}`;
          resolve({
            tag,
            url,
            child,
            scrape: async () => parseScrape(await (await fetch(`${url}/__matrix/telemetry`)).text()),
            quiet: () => fetch(`${url}/__matrix/quiet`, { method: 'POST' }).catch(() => {}),
          });
        }
      }
    });
  });
}

/** A deployment: origin A, other process B, a spare for restarts, and the proxy in front. */
async function startPair(shared) {
  const [A, B, spare] = await Promise.all([startServer(shared), startServer(shared), startServer(shared)]);
  const upstreams = { A: A.url, B: B.url };
  const proxy = await startProxy(upstreams);
  return { shared, A, B, spare: Promise.resolve(spare), upstreams, proxy };
}

const pairs = {};
const pairFor = cell => {
  const shared = cell.behaviour === 'correct';
  pairs[shared] ??= startPair(shared);
  return pairs[shared];
};

async function waitFor(_what, predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

const routes = (pair, body) => fetch(`${pair.proxy.url}/__lab/routes`, { method: 'POST', body: JSON.stringify(body) });
const cut = (pair, body) => fetch(`${pair.proxy.url}/__lab/cut`, { method: 'POST', body: JSON.stringify(body) });

const TRAFFIC = { idle: { pre: 2, away: 3 }, live: { pre: 2, away: 3 }, burst: { pre: 10, away: 25 } };

async function runCell(cell, index) {
  const pair = await pairFor(cell);
  const spare = await pair.spare;
  const id = `c${index}`;
  const scraped = [pair.A, pair.B, spare];
  const before = { client: parseScrape(await telemetry.scrape()) };
  for (const p of scraped) before[p.tag] = await p.scrape();
  const finalScrapes = {};
  const goneTags = [];
  await routes(pair, { post: 'A', get: 'A', resume: 'A' });
  const url = `${pair.proxy.url}/mcp/${Buffer.from(JSON.stringify({ ...cell, id })).toString('base64url')}`;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    reconnectionOptions: {
      initialReconnectionDelay: TIMING.reconnectMs,
      maxReconnectionDelay: TIMING.reconnectMs * 2,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 3,
    },
  });
  const client = new Client({ name: 'matrix-app', version: '1.0.0' });
  const received = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => received.push(n.params.data));
  client.onerror = () => {};
  const traffic = TRAFFIC[cell.traffic];
  const emit = count => client.callTool({ name: 'emit', arguments: { count } }).catch(() => {});
  const log = () => pair.proxy.log.filter(e => e.sessionId === sessionId);
  let sessionId;
  let error;
  try {
    await client.connect(transport);
    sessionId = transport.sessionId;
    const stateless = cell.behaviour === 'stateless';
    if (!stateless)
      await waitFor('the standalone stream', () => log().some(e => e.kind === 'get' && e.status === 200), 5000);
    if (cell.fault === 'cut-before-first-frame') await cut(pair, { sessionId, midFrame: false });
    await emit(traffic.pre);
    if (cell.fault !== 'cut-before-first-frame')
      await waitFor('the first events', () => received.length >= traffic.pre, 3000);
    if (cell.fault === 'frameless-resume-cut') await routes(pair, { resume: 'B', get: 'A' });
    if (cell.fault === 'reroute') await routes(pair, { resume: 'B', get: 'B' });
    if (cell.fault === 'cut-mid-frame') await cut(pair, { sessionId, midFrame: true });
    else if (cell.fault !== 'cut-before-first-frame') await cut(pair, { sessionId, midFrame: false });
    if (stateless && cell.fault === 'cut-mid-frame') await cut(pair, { sessionId, kinds: ['post'], midFrame: true });
    await emit(traffic.away);
    if (cell.fault === 'restart' || cell.fault === 'sigkill') {
      const origin = pair.A;
      finalScrapes[origin.tag] = await origin.scrape(); // the last scrape Prometheus took of it
      goneTags.push(origin.tag);
      const exited = new Promise(resolve => origin.child.once('exit', resolve));
      origin.child.kill(cell.fault === 'restart' ? 'SIGTERM' : 'SIGKILL');
      await exited;
      pair.A = spare;
      pair.upstreams.A = spare.url;
      pair.spare = startServer(pair.shared);
      pair.spare.catch(() => {});
    }
    if (cell.fault === 'frameless-resume-cut') {
      await waitFor('the resume', () => log().some(e => e.kind === 'resume' && e.status !== null), 3000);
      await sleep(TIMING.framelessCutMs);
      await cut(pair, { sessionId, kinds: ['resume', 'get'], midFrame: false });
      await routes(pair, { resume: 'A', get: 'A' });
    }
    // The reconnect, its verdict (or its timeout), and a reconnect after an inconclusive resume.
    await sleep(TIMING.reconnectMs + TIMING.verdictTimeoutMs + 600);
    for (const p of [pair.A, pair.B]) await p.quiet();
    await sleep(300);
    // A live client goes on talking: the servers judge their overdue events on a request after the window. Twice,
    // a window apart: events that went pending after the session's last activity (a revived session's ticker after
    // its resume) start their window at the first request and are judged at the next.
    const visited = new Set(log().map(e => e.target));
    for (let round = 0; round < 2; round++) {
      await sleep(TIMING.deliveryWindowMs + 150);
      for (const target of ['A', 'B']) {
        if (target === 'B' && !visited.has('B')) continue;
        await routes(pair, { post: target });
        await client.ping().catch(() => {});
      }
    }
    await routes(pair, { post: 'A' });
    await sleep(150);
  } catch (e) {
    error = String(e?.message ?? e);
  }
  const after = { client: parseScrape(await telemetry.scrape()) };
  for (const p of scraped) after[p.tag] = finalScrapes[p.tag] ?? (await p.scrape().catch(() => new Map()));
  await client.close().catch(() => {});
  await sleep(50);
  const server = {};
  for (const p of scraped)
    for (const [k, v] of Object.entries(delta(after[p.tag], before[p.tag]))) server[k] = (server[k] ?? 0) + v;
  return {
    cell: { ...cell, name: cellName(cell) },
    sent: sent.get(id) ?? [],
    writtenLive: writtenLive.get(id) ?? [],
    stored: stored.get(id) ?? [],
    received,
    goneTags,
    routesSeen: log().map(e => `${e.kind}:${e.target}:${e.status}`),
    client: delta(after.client, before.client),
    server,
    error,
  };
}

const records = [];
const started = Date.now();
for (const [i, cell] of cells.entries()) {
  const t0 = Date.now();
  records.push({ ...(await runCell(cell, i)), ms: Date.now() - t0 });
  process.stderr.write(`matrix: ${i + 1}/${cells.length} ${cellName(cell)}\n`);
}
writeFileSync(out, JSON.stringify({ records, ms: Date.now() - started }));
for (const pair of await Promise.all(Object.values(pairs))) {
  await pair.proxy.close();
  for (const p of [pair.A, pair.B, await pair.spare.catch(() => undefined)]) p?.child.kill('SIGTERM');
}
await storeService.close();
process.exit(0);
