#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A runnable replica of the reference deployment (README.md here): the MCP server your tools go in, serving any
// session from Redis, with forkwatch preloaded the usual way:
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=3001 node --require forkwatch/register deploy/server.cjs
//
// Env: PORT (3000), HOST (127.0.0.1; in a container 0.0.0.0 with ALLOWED_HOSTS), ALLOWED_HOSTS (comma-separated
// Host names the DNS-rebinding check accepts), REDIS_URL (redis://127.0.0.1:6379), DRAIN_MS (0: how long the health
// check fails before the streams are ended; on Kubernetes a few seconds, so the pod leaves the endpoints first),
// SSE_KEEP_ALIVE_MS (5000; the SDK's default is 15000): how often an idle SSE stream gets a comment. Behind a
// balancer that does not pass a client's close on, the stream of a client that left is held (and its resume answered
// 409) until such a write fails: two periods at most (README "Dead streams").
// SIGTERM: the health check fails first (the balancer drains the replica), then open streams are ended cleanly,
// so their clients resume on another replica from the shared log, then the process exits.
const { createClient } = require('redis');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { z } = require('zod');
const { createReplica } = require('./mcp-replica.cjs');

async function main() {
  const redis = createClient({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  redis.on('error', error => process.stderr.write(`redis: ${error.message}\n`));
  await redis.connect();
  const buildServer = () => {
    const server = new McpServer({ name: 'reference-replica', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool('notify', { inputSchema: { text: z.string() } }, async ({ text }) => {
      // A notification on the session's standalone stream: stored in Redis first, then written if connected here.
      await server.server.notification({ method: 'notifications/message', params: { level: 'info', data: text } });
      return { content: [{ type: 'text', text: 'sent' }] };
    });
    return server;
  };
  const host = process.env.HOST ?? '127.0.0.1';
  const allowedHosts = process.env.ALLOWED_HOSTS?.split(',').filter(Boolean);
  const keepAliveMs = Number(process.env.SSE_KEEP_ALIVE_MS ?? 5000);
  const replica = createReplica({ redis, buildServer, host, allowedHosts, keepAliveMs });
  replica.app.all('/mcp', replica.handleMcp);
  const http = replica.app.listen(Number(process.env.PORT ?? 3000), host, () =>
    process.stderr.write(`listening on ${host}:${http.address().port}\n`),
  );
  process.once('SIGTERM', async () => {
    replica.drain();
    await new Promise(resolve => setTimeout(resolve, Number(process.env.DRAIN_MS ?? 0)));
    http.close();
    await replica.close();
    await redis.quit().catch(() => {});
    process.exit(0);
  });
}

main().catch(error => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
