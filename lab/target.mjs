/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fork lab as a long-running Prometheus target, for the rule and dashboard end-to-end tests: one process runs
// servers A (and, in the forked scenario, B and C) with the real SDK, the cutting proxy, and a real SDK client
// app, all instrumented by one forkwatch, whose metrics are served on LAB_TARGET.metricsPort.
// Run with `--import ./lab/esm-hooks.mjs`. Prints `READY <controlPort>`; POST /run plays one batch of sessions,
// each: connect, receive, lose its stream, resume (to A, or round robin to A, B and C when forked), close.
//   A: the session's own log (a counter per stream)    -> resumed, skipped events counted (the live stream steps by
//      one: core/density.ts; a session-wide integer counter interleaves the tool results and proves nothing)
//   B: the SDK's example store, no log for the session -> 200 with keep-alives only: inconclusive (timeout), then
//      the SDK reconnects without its cursor: forked (cursor_dropped); the server records unknown_cursor
//   C: ids starting again from 1 on a fresh stream     -> forked (id_regressed), with duplicate ids
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { LabEventStore } from './event-store.mjs';
import { startProxy } from './proxy.mjs';

const require = createRequire(import.meta.url);
const { forkwatchEntry, loadServerSdk, startLabServer } = require('./server-app.cjs');
const { setupTelemetry } = require('./telemetry.cjs');
const { sdkLoader } = require('./client-config.cjs');
const { waitFor } = require('./client-scenario.cjs');

const {
  scenario = 'healthy',
  metricsPort,
  sessionsPerRun = 4,
  verdictTimeoutMs = 800,
} = JSON.parse(process.env.LAB_TARGET ?? '{}');
const _telemetry = setupTelemetry({
  forkwatch: await import(pathToFileURL(forkwatchEntry('esm')).href),
  instrumentationConfig: { verdictTimeoutMs },
  metricsPort,
});
const serverSdk = await loadServerSdk({ sdk: 'v1' }, 'esm');
const start = config =>
  startLabServer({
    config: { telemetry: false, keepAliveMs: 200, ...config },
    sdk: serverSdk,
    LabEventStore,
    moduleSystem: 'esm',
  });
const url = server => `http://127.0.0.1:${server.address().port}`;

const servers = { A: await start({ name: 'A', store: { idFormat: 'hex-sequence' } }) };
if (scenario === 'forked') {
  servers.B = await start({ name: 'B', store: 'sdk-example', hydrate: true });
  servers.C = await start({
    name: 'C',
    store: { idFormat: 'hex-sequence', unknownCursor: 'fresh' },
    hydrate: true,
    ticker: { everyMs: 50, count: 2 },
  });
}
const proxy = await startProxy(Object.fromEntries(Object.entries(servers).map(([k, s]) => [k, url(s)])), {
  post: 'A',
  get: 'A',
  resume: scenario === 'forked' ? ['A', 'B', 'C'] : 'A',
});

const load = sdkLoader(undefined, 'esm');
const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { LoggingMessageNotificationSchema } = await load('@modelcontextprotocol/sdk/types.js');
const sleep = ms => new Promise(r => setTimeout(r, ms));
const cut = body => fetch(`${proxy.url}/__lab/cut`, { method: 'POST', body: JSON.stringify(body) });

async function session() {
  const transport = new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`), {
    reconnectionOptions: {
      initialReconnectionDelay: 100,
      maxReconnectionDelay: 200,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 1,
    },
  });
  const client = new Client({ name: 'fork-lab-target', version: '1.0.0' });
  const received = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => received.push(n.params.data));
  client.onerror = () => {};
  try {
    await client.connect(transport);
    const sessionId = transport.sessionId;
    const gets = kind => proxy.log.filter(e => e.sessionId === sessionId && e.kind === kind);
    await waitFor('the standalone stream', () => gets('get').some(e => e.status === 200), 5000);
    await client.callTool({ name: 'emit', arguments: { count: 2 } });
    await waitFor('2 events', () => received.length >= 2, 5000);
    await cut({ sessionId, midFrame: false });
    await client.callTool({ name: 'emit', arguments: { count: 1 } }); // sent while the client is away
    await waitFor('the resume', () => gets('resume').some(e => e.status !== null), 5000);
    const resumedTo = gets('resume')[0].target;
    if (resumedTo === 'B') {
      // A silent stream: after the verdict timeout, drop it too; the SDK reconnects without its cursor.
      await sleep(verdictTimeoutMs + 100);
      await cut({ sessionId, midFrame: false, kinds: ['resume'] });
      await waitFor('the reconnect', () => gets('get').length >= 2, 5000);
      await sleep(50);
    } else {
      await waitFor('a frame after the resume', () => received.length >= 3, 5000);
    }
  } finally {
    await client.close().catch(() => {});
  }
}

const control = createServer(async (req, res) => {
  if (req.method === 'POST' && req.url === '/run') {
    const results = await Promise.allSettled(Array.from({ length: sessionsPerRun }, () => session()));
    const failed = results.filter(r => r.status === 'rejected').map(r => String(r.reason?.message ?? r.reason));
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ sessions: results.length, failed }));
    return;
  }
  res.writeHead(404).end();
});
control.listen(0, '127.0.0.1', () => process.stdout.write(`READY ${control.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
