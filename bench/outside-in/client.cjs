/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The outside-in bench's MCP client: an SDK 1.32.2 `Client` on `StreamableHTTPClientTransport`, as an application
// writes one; its telemetry, if any, comes from the command line. It connects (the SDK opens the standalone GET
// stream after initialize), then calls the server's `burst` tool: `warmup` untimed bursts, then `timed` bursts,
// alternating the request stream and the standalone stream. Around each burst it reads its own CPU time
// (`process.cpuUsage()`, from the call until the last notification arrived); the server reports its own.
//
// BENCH (JSON env): { url, count, warmup, timed }. Prints one JSON line.
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { LoggingMessageNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');

const { cpuReading, cpuSpent } = require('./threads.cjs');

const config = JSON.parse(process.env.BENCH);
const patched = StreamableHTTPClientTransport.prototype._handleSseStream.__wrapped === true;
const loadedFrom = Object.keys(require.cache).find(k => k.endsWith('/forkwatch/build/src/register.js'));

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(config.url));
  const client = new Client({ name: 'outside-in', version: '1.0.0' });
  let received = 0;
  let lastSeq = 0;
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
    received++;
    lastSeq = n.params.data.seq;
  });
  // A server under valgrind (the --callgrind mode) takes minutes to answer initialize.
  await client.connect(transport, { timeout: 1_800_000 });

  const burst = async kind => {
    received = 0;
    lastSeq = 0;
    const start = cpuReading();
    const result = await client.callTool({ name: 'burst', arguments: { count: config.count, kind } }, undefined, {
      timeout: 600_000,
    });
    // The standalone stream's last frames may arrive after the answer on the request stream.
    for (let i = 0; received < config.count; i++) {
      if (i > 200_000) throw new Error(`got ${received}/${config.count} notifications`);
      await new Promise(r => setImmediate(r));
    }
    const end = cpuReading();
    const spent = cpuSpent(start, end);
    if (result.isError || lastSeq !== config.count) throw new Error(`burst failed: ${JSON.stringify(result)}`);
    const server = JSON.parse(result.content[0].text);
    return {
      kind,
      clientCpuUs: spent.cpuUs,
      serverCpuUs: server.cpuUs,
      serverWallUs: server.wallUs,
      clientThreads: spent.threads,
      serverThreads: server.threads,
      // The readings, for the CPU between bursts (outside-in.mjs, `span`).
      client: { start, end },
      server: { start: server.start, end: server.end },
    };
  };

  const kinds = ['request', 'standalone'];
  for (let i = 0; i < config.warmup; i++) for (const kind of kinds) await burst(kind);
  const bursts = [];
  for (let i = 0; i < config.timed; i++) {
    // Alternate which kind goes first, so neither always follows the other.
    for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) bursts.push(await burst(kind));
  }
  await transport.terminateSession().catch(() => {});
  await client.close();
  process.stdout.write(`${JSON.stringify({ patched, loadedFrom, bursts, rssBytes: process.memoryUsage().rss })}\n`);
  process.exit(0);
}

main().catch(error => {
  process.stderr.write(`outside-in client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
