/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One server replica of the fleet on the real parts: the reference deployment's replica (deploy/mcp-replica.cjs:
// the SDK's web-standard transport, sessions registered in Redis and hydrated on any replica), with forkwatch
// unless telemetry is off. Configured by FLEET_SERVER (JSON):
//   name, telemetry (default true), store 'redis' (deploy/redis-event-store.cjs, shared) | 'local' (a log per
//   replica, lab/fleet/shared-store.cjs), redisUrl, keepAliveMs, deliveryWindowMs, instrumentationConfig,
//   fleetMarks (forkwatch's fleetDelivery on deploy/redis-delivery-marks.cjs)
// Tool `emit {from, count}` sends notifications numbered by the app (`seq`) on the session's standalone stream.
// Routes besides /mcp and /healthz: GET /metrics, GET /__fleet/report (signals, process costs, sessions served).
// Prints `LISTENING <port>` once it accepts connections. SIGTERM: drain, end open streams cleanly, exit.
const path = require('node:path');
const { setupFleetTelemetry, ProcessMeter } = require('./telemetry.cjs');
const { LocalEventStore } = require('./shared-store.cjs');

const config = {
  name: 'S',
  telemetry: true,
  store: 'redis',
  keepAliveMs: 15_000,
  ...JSON.parse(process.env.FLEET_SERVER ?? '{}'),
};
// One node-redis client for the app's store and forkwatch's fleet delivery marks (issue 49): the marks get it before
// it connects (their calls before that fail and count nothing; the first traffic comes after).
const { createClient } = require('redis');
const redis = createClient({ url: config.redisUrl });
redis.on('error', () => {});
const { RedisDeliveryMarks } = require('../../deploy/redis-delivery-marks.cjs');
// The lab's scoring only: which sessions this replica's claims counted (the counter itself has no session label).
const claims = new Map(); // session id -> events this replica claimed as never delivered
class ScoredDeliveryMarks extends RedisDeliveryMarks {
  async claim(sessionId, claim) {
    const n = await super.claim(sessionId, claim);
    if (n > 0) claims.set(sessionId, (claims.get(sessionId) ?? 0) + n);
    return n;
  }
}
const telemetry = config.telemetry
  ? setupFleetTelemetry({
      forkwatch: require(path.join(__dirname, '../../build/src/index.js')),
      instrumentationConfig: {
        ...(config.deliveryWindowMs ? { deliveryWindowMs: config.deliveryWindowMs } : {}),
        ...(config.fleetMarks ? { fleetDelivery: new ScoredDeliveryMarks(redis) } : {}),
        ...config.instrumentationConfig,
      },
    })
  : undefined;
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { z } = require('zod');
const { createReplica } = require('../../deploy/mcp-replica.cjs');

const meter = new ProcessMeter();
const served = new Map(); // session id -> requests served here
let eventsSent = 0;
let sessionsCreated = 0;

async function main() {
  await redis.connect();
  const buildServer = () => {
    sessionsCreated++;
    const server = new McpServer({ name: `fleet-${config.name}`, version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool(
      'emit',
      { inputSchema: { from: z.number().int(), count: z.number().int() } },
      async ({ from, count }) => {
        for (let i = 0; i < count; i++) {
          eventsSent++;
          await server.server.notification({
            method: 'notifications/message',
            params: { level: 'info', data: { origin: config.name, seq: from + i } },
          });
        }
        return { content: [{ type: 'text', text: `emitted ${count}` }] };
      },
    );
    return server;
  };
  const replica = createReplica({
    redis,
    buildServer,
    keepAliveMs: config.keepAliveMs,
    ...(config.store === 'local' ? { eventStoreFor: () => new LocalEventStore() } : {}),
  });
  const { app } = replica;
  // Which sessions reached this replica: ground truth for "the session moved".
  app.all('/mcp', (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (id) served.set(id, (served.get(id) ?? 0) + 1);
    return replica.handleMcp(req, res);
  });
  app.get('/metrics', async (_req, res) => {
    res.type('text/plain; version=0.0.4').send(telemetry ? await telemetry.scrape() : '');
  });
  app.get('/__fleet/report', async (_req, res) => {
    const signals = telemetry?.signals;
    res.json({
      name: config.name,
      telemetry: config.telemetry,
      sessionsOpen: replica.sessions.size,
      sessionsCreated,
      served: Object.fromEntries(served),
      fleetClaims: Object.fromEntries(claims),
      signals: signals ? Object.fromEntries(signals.sessions) : {},
      latencyMs: signals?.latency.values ?? [],
      process: meter.report(eventsSent),
      metrics: telemetry ? await telemetry.scrape() : '',
    });
  });

  const http = app.listen(0, '127.0.0.1', () => {
    meter.start();
    setInterval(() => meter.sample(replica.sessions.size), 5000).unref();
    process.stdout.write(`LISTENING ${http.address().port}\n`);
  });
  process.once('SIGTERM', async () => {
    replica.drain();
    http.close();
    await replica.close();
    process.exit(0);
  });
}

main().catch(error => {
  process.stderr.write(`fleet replica failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
