/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One process of the server-side benchmark (server-delivery.mjs): a telemetry variant (bare NodeSDK, or NodeSDK +
// forkwatch) set up first, then the real web-standard server transport of @modelcontextprotocol/sdk with the SDK's
// own InMemoryEventStore. Per session: the standalone GET stream open (its body read and discarded) while `count`
// notifications are stored and written live, then the stream dropped while `count` more are stored with no
// connection (the ledger's pending path), then close() (which settles them as abandoned). Prints JSON: CPU
// microseconds per stored event over the measured sessions.
const [variant, forkwatchEntry, countArg, sessionsArg, warmupArg] = process.argv.slice(2);
const { setupVariant } = require('./variants.cjs');
const telemetry = setupVariant(variant, { forkwatchEntry });
const {
  WebStandardStreamableHTTPServerTransport: Transport,
} = require('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const { InMemoryEventStore } = require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');

if (variant.includes('forkwatch') && Transport.prototype.handleGetRequest.__wrapped !== true) {
  throw new Error(`${variant}: the server transport is not patched by forkwatch`);
}
const count = Number(countArg);
const headers = { accept: 'text/event-stream', 'mcp-session-id': 's', 'mcp-protocol-version': '2025-11-25' };
const notification = n => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { n } } });

// --shared-store: one store object for every session, the case where forkwatch records who stored each event.
const sharedStore = process.env.FORKWATCH_BENCH_SHARED_STORE === '1' ? new InMemoryEventStore() : undefined;

async function session() {
  const eventStore = sharedStore ?? new InMemoryEventStore();
  const transport = new Transport({ sessionIdGenerator: () => 's', eventStore });
  transport.sessionId = 's';
  transport._initialized = true;
  const res = await transport.handleRequest(new Request('http://127.0.0.1/mcp', { headers }));
  const reader = res.body.getReader();
  const drain = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })().catch(() => {});
  for (let n = 0; n < count; n++) await transport.send(notification(n));
  await reader.cancel();
  await drain;
  for (let n = 0; n < count; n++) await transport.send(notification(n));
  await transport.close();
}

(async () => {
  for (let i = 0; i < Number(warmupArg); i++) await session();
  const sessions = Number(sessionsArg);
  const cpu = process.cpuUsage();
  for (let i = 0; i < sessions; i++) await session();
  const used = process.cpuUsage(cpu);
  const events = sessions * count * 2;
  process.stdout.write(`${JSON.stringify({ variant, events, cpuUsPerEvent: (used.user + used.system) / events })}\n`);
  await telemetry.shutdown();
  process.exit(0);
})().catch(error => {
  console.error(error);
  process.exit(1);
});
