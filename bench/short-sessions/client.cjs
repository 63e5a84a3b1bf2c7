/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The short-sessions bench's MCP client: many short sessions of an SDK 1.32.2 `Client` on
// `StreamableHTTPClientTransport`, as an agent that opens a session per task writes them. Each session: connect
// (initialize, notifications/initialized, and the standalone GET stream the SDK opens after it), one `tools/call` of
// `notify` whose POST stream carries `count` notifications/message, then DELETE (terminateSession) and close.
// `concurrency` sessions run at a time. Its telemetry, if any, comes from the command line.
//
// `warmup` untimed sessions, then a full GC on both sides, then `sessions` timed ones. Its figures: its own CPU
// (process.cpuUsage(), all threads) from the first timed session's start to the last one's end, and the server's,
// read from inside the server (`GET /cpu` over plain node:http, which no fetch observer sees) at the same two points.
//
// BENCH (JSON env): { url, sessions, warmup, count, concurrency, idle }. Prints one JSON line.
const http = require('node:http');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { LoggingMessageNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');
const { cpuReading, cpuSpent } = require('../outside-in/threads.cjs');
const { gcPausedUs } = require('../outside-in/gc-pauses.cjs');

const config = JSON.parse(process.env.BENCH);
const patched = StreamableHTTPClientTransport.prototype._handleSseStream.__wrapped === true;
const loadedFrom = Object.keys(require.cache).find(k => k.endsWith('/forkwatch/build/src/register.js'));

/** The server's own CPU reading (µs), over plain HTTP. */
function serverCpu(gc) {
  const url = new URL(config.url);
  const query = gc ? `?gc=1${config.idle ? '&idle=1' : ''}` : '';
  return new Promise((resolve, reject) => {
    const req = http.get({ host: url.hostname, port: url.port, path: `/cpu${query}` }, res => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', c => (text += c));
      res.on('end', () => resolve(JSON.parse(text)));
    });
    req.on('error', reject);
  });
}

async function session() {
  const transport = new StreamableHTTPClientTransport(new URL(config.url));
  const client = new Client({ name: 'short-sessions', version: '1.0.0' });
  let received = 0;
  client.setNotificationHandler(LoggingMessageNotificationSchema, () => {
    received++;
  });
  await client.connect(transport);
  const result = await client.callTool({ name: 'notify', arguments: { count: config.count } });
  if (result.isError || received !== config.count) {
    throw new Error(`session got ${received}/${config.count} notifications: ${JSON.stringify(result)}`);
  }
  await transport.terminateSession();
  await client.close();
}

/** `total` sessions, `concurrency` at a time. */
async function sessions(total) {
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      await session();
    }
  };
  await Promise.all(Array.from({ length: Math.min(config.concurrency, total) }, worker));
}

async function main() {
  await sessions(config.warmup);
  // The idle variant: forkwatch's patches stay, its work stops here, on both sides (outside-in/idle.cjs).
  if (config.idle) require('../outside-in/idle.cjs').switchOff();
  globalThis.gc?.();
  const serverBefore = await serverCpu(true);
  const t0 = process.hrtime.bigint();
  const usageBefore = process.cpuUsage();
  const before = cpuReading();
  const gcBefore = gcPausedUs();
  await sessions(config.sessions);
  const spent = cpuSpent(before, cpuReading());
  const gcAfter = gcPausedUs();
  const usage = process.cpuUsage(usageBefore);
  const t1 = process.hrtime.bigint();
  const serverAfter = await serverCpu(false);
  // What the sessions left behind: the heap in use after a full GC (what every later major GC marks again).
  globalThis.gc?.();
  const heapUsedAfterGc = process.memoryUsage().heapUsed;
  process.stdout.write(
    `${JSON.stringify({
      patched,
      loadedFrom,
      clientCpuUs: spent.cpuUs,
      // Where it went: user and system time, and per thread group (main, V8's helpers, the rest: threads.cjs).
      clientUserUs: usage.user,
      clientSystemUs: usage.system,
      clientThreads: spent.threads,
      serverCpuUs: serverAfter.cpuUs - serverBefore.cpuUs,
      serverThreads: cpuSpent(serverBefore, serverAfter).threads,
      // GC pauses on each side's main thread in the timed window (outside-in/gc-pauses.cjs).
      clientGcUs: gcAfter - gcBefore,
      serverGcUs: serverAfter.gcUs - serverBefore.gcUs,
      wallUs: Number(t1 - t0) / 1000,
      timedWindowUs: [Number(t0 / 1000n), Number(t1 / 1000n)],
      serverOpenAfter: serverAfter.open,
      rssBytes: process.memoryUsage().rss,
      heapUsedAfterGc,
    })}\n`,
  );
  process.exit(0);
}

main().catch(error => {
  process.stderr.write(`short-sessions client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
