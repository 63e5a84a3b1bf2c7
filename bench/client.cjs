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
    if (received !== count || lastSeq !== count || result.isError) throw new Error(`got ${received}/${count} notifications`);
  };

  // The warm-up call is measured too, as the cold phase: it includes the JIT warm-up of the SDK and of forkwatch.
  const coldCpu0 = process.cpuUsage();
  await stream(config.warmup);
  const coldCpu = process.cpuUsage(coldCpu0);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await stream(config.count);
  const wallNs = Number(process.hrtime.bigint() - t0);
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
    JSON.stringify({
      variant: config.variant,
      count: config.count,
      wallMs: wallNs / 1e6,
      eventsPerSecond: config.count / (wallNs / 1e9),
      cpuUs: cpu.user + cpu.system,
      cpuUsPerFrame: (cpu.user + cpu.system) / config.count,
      coldCpuUsPerFrame: (coldCpu.user + coldCpu.system) / config.warmup,
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      ...extra,
    }) + '\n',
  );
}

main().catch(error => {
  process.stderr.write(`bench client (${config.variant}) failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
