/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One benchmark run of one variant, in its own process: sets the variant's telemetry up, loads the real MCP SDK
// client, connects to the benchmark server over loopback HTTP, warms up with one tool call that streams BENCH.warmup
// notifications (the cold phase), then times one that streams BENCH.count (the warm phase). Prints one JSON line.
//
// BENCH (JSON env): { variant, url, count, warmup, bytes, forkwatchEntry }
process.env.OTEL_TRACES_EXPORTER = 'none';
process.env.OTEL_METRICS_EXPORTER = 'none';
process.env.OTEL_LOGS_EXPORTER = 'none';

const config = JSON.parse(process.env.BENCH);
const { setupVariant } = require('./variants.cjs');

const telemetry = setupVariant(config.variant, config);
const collect = () => {
  if (typeof global.gc !== 'function') throw new Error('run with --expose-gc');
  global.gc();
  global.gc();
};
const streamableHttpModule = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { LoggingMessageNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');
const { StreamableHTTPClientTransport } = streamableHttpModule;
telemetry.check({ StreamableHTTPClientTransport, streamableHttpModule });

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(config.url));
  const client = new Client({ name: 'forkwatch-bench', version: '1.0.0' });
  let received = 0;
  let lastSeq = 0;
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
    received++;
    lastSeq = n.params.data.seq;
  });
  await client.connect(transport);

  const stream = async count => {
    received = 0;
    const result = await client.callTool({ name: 'stream', arguments: { count, bytes: config.bytes } }, undefined, {
      timeout: 600_000,
    });
    // Handlers run in microtasks after their frame: let the last ones finish.
    while (received < count) await new Promise(r => setImmediate(r));
    if (received !== count || lastSeq !== count || result.isError)
      throw new Error(`got ${received}/${count} notifications`);
  };

  // The warm-up call is measured too, as the cold phase: it includes the JIT warm-up of the SDK and of forkwatch.
  const coldCpu0 = process.cpuUsage();
  await stream(config.warmup);
  const coldCpu = process.cpuUsage(coldCpu0);
  if (config.ab) return abPairs(stream, transport, client);
  // Every timed call starts from a collected heap (run with --expose-gc), so a major GC left over from before
  // does not land in one variant's measurement and not in another's.
  collect();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await stream(config.count);
  const t1 = process.hrtime.bigint();
  const wallNs = Number(t1 - t0);
  const cpu = process.cpuUsage(cpu0);
  const memory = process.memoryUsage();

  const extra = {};
  const instrumentation = telemetry.instrumentation;
  if (instrumentation?.clientLedger) {
    // The detector really ran on every frame: the session's record holds the last id of the stream.
    const record = instrumentation.clientLedger.peek(transport.sessionId);
    if (!record?.lastConsumedId) throw new Error('forkwatch saw no frame');
    extra.ledgerSessions = instrumentation.clientLedger.size;
  }
  if (telemetry.spans) extra.spans = telemetry.spans.getFinishedSpans().length;
  if (config.variant === 'sdk+undici' && !(extra.spans > 0)) throw new Error('undici instrumentation recorded no span');

  await transport.terminateSession().catch(() => {});
  await client.close();
  await telemetry.shutdown();
  process.stdout.write(
    `${JSON.stringify({
      variant: config.variant,
      count: config.count,
      wallMs: wallNs / 1e6,
      eventsPerSecond: config.count / (wallNs / 1e9),
      cpuUs: cpu.user + cpu.system,
      cpuUsPerFrame: (cpu.user + cpu.system) / config.count,
      coldCpuUsPerFrame: (coldCpu.user + coldCpu.system) / config.warmup,
      rssBytes: memory.rss,
      // The timed call on the monotonic clock, in µs: the same clock as the timestamps of a --cpu-prof profile.
      timedWindowUs: [Number(t0 / 1000n), Number(t1 / 1000n)],
      heapUsedBytes: memory.heapUsed,
      ...extra,
    })}\n`,
  );
}

/**
 * In-process A/B: in one warm process, tool calls alternately with forkwatch patched and unpatched (disable() restores
 * the SDK's methods; enable() patches the loaded SDK again), in pairs whose order alternates. Adjacent calls share
 * the heap, the JIT state and the machine's load of the moment, so their ratio isolates forkwatch's per-frame cost.
 * Swapping the prototype's methods deoptimizes the SDK code that depends on them, so every switch is followed by an
 * untimed settling call before the timed one: a running application never switches.
 */
async function abPairs(stream, transport, client) {
  const instrumentation = telemetry.instrumentation;
  const proto = StreamableHTTPClientTransport.prototype;
  const set = on => {
    if (on) instrumentation.enable();
    else instrumentation.disable();
    if (proto._handleSseStream.__wrapped !== (on ? true : undefined))
      throw new Error(`forkwatch is not ${on ? 'on' : 'off'}`);
  };
  const timed = async on => {
    set(on);
    await stream(config.ab.settle);
    collect();
    const cpu0 = process.cpuUsage();
    await stream(config.ab.count);
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / config.ab.count;
  };
  const pairs = [];
  // One pair more than asked, discarded: the first calls after the first forced GC run slower in both states.
  await timed(true);
  await timed(false);
  for (let i = 0; i < config.ab.pairs; i++) {
    // Alternate which goes first, so a drift within the pair cancels out over the pairs.
    const first = i % 2 === 0;
    const a = await timed(first);
    const b = await timed(!first);
    pairs.push(first ? { on: a, off: b } : { on: b, off: a });
  }
  set(true);
  await transport.terminateSession().catch(() => {});
  await client.close();
  await telemetry.shutdown();
  process.stdout.write(`${JSON.stringify({ variant: config.variant, count: config.ab.count, pairs })}\n`);
}

main().catch(error => {
  process.stderr.write(`bench client (${config.variant}) failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
