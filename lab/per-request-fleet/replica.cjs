/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One replica of the per-request fleet (protocol 2026-07-28): the real @modelcontextprotocol/server 2.x
// `createMcpHandler` (a fresh McpServer per request, the in-memory event bus) served by @modelcontextprotocol/node.
// Started with `--require forkwatch/register`, which patches it by its module hooks alone and serves the Prometheus
// metrics on OTEL_EXPORTER_PROMETHEUS_PORT. Configured by FLEET_REPLICA (JSON): name.
//
// Routes: /mcp (the MCP endpoint, behind the balancer), GET /healthz (HAProxy's check), GET /__fleet/truth (the
// ground truth below), POST /__fleet/publish?count=N (publishes on this replica's bus: only the driver knows which
// replica holds a listen stream). Prints `LISTENING <port>` once it accepts connections; SIGTERM stops it.
const { createServer } = require('node:http');
const { McpServer, createMcpHandler, inputRequired } = require('@modelcontextprotocol/server');
const { toNodeHandler } = require('@modelcontextprotocol/node');
const { z } = require('zod');

const config = { name: 'r', ...JSON.parse(process.env.FLEET_REPLICA ?? '{}') };
const NOTIFICATION = '(notification)';

// Ground truth, kept by the tools and by the HTTP layer (never by forkwatch).
const truth = {
  name: config.name,
  executions: {},
  /** Tool handlers running now. */
  running: 0,
  /** Handlers that stopped on their request's abort signal. */
  honouredCancel: 0,
  /** Handlers that ran to completion after their request's signal was aborted: their results went nowhere. */
  completedAfterAbort: 0,
  publishes: 0,
  /** Deliveries the publishes owe: each publish reaches every listen stream open here. */
  deliveriesOwed: 0,
  /** POSTs to /mcp by their Mcp-Method header: received, answered in full, closed before the response ended. */
  http: { received: {}, finished: {}, closedEarly: {} },
};
const bump = (table, key) => {
  table[key] = (table[key] ?? 0) + 1;
};
const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
const text = t => ({ content: [{ type: 'text', text: t }] });

/**
 * Registers a tool whose runs the ground truth counts: started, still running, finished although its request's
 * signal had fired (the result went nowhere), stopped on that signal (the cancellation honoured).
 */
function tool(server, name, config, body) {
  server.registerTool(name, config, async (args, ctx) => {
    bump(truth.executions, name);
    truth.running++;
    try {
      const result = await body(args, ctx);
      if (ctx.mcpReq.signal.aborted) truth.completedAfterAbort++;
      return result;
    } catch (error) {
      if (ctx.mcpReq.signal.aborted) truth.honouredCancel++;
      throw error;
    } finally {
      truth.running--;
    }
  });
}

const factory = () => {
  const server = new McpServer(
    { name: `per-request-fleet-${config.name}`, version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
  );
  const record = z.object({ ms: z.number(), key: z.string() });
  // Not idempotent, ignores the abort signal.
  tool(server, 'write_record', { inputSchema: record, annotations: { idempotentHint: false } }, async ({ ms, key }) => {
    await sleep(ms);
    return text(`wrote ${key} on ${config.name}`);
  });
  // Idempotent: clients call it twice on purpose.
  tool(server, 'read_record', { inputSchema: record, annotations: { idempotentHint: true } }, async ({ ms, key }) => {
    await sleep(ms);
    return text(`read ${key} on ${config.name}`);
  });
  // Honours cancellation: stops on the abort signal (the spec's cancellation working).
  tool(server, 'cooperative_job', { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => {
    await sleep(ms, ctx.mcpReq.signal);
    return text('done');
  });
  // MRTR (SEP-2322): asks for a confirmation round; the client's retry carries the state, so it may land anywhere.
  tool(server, 'confirm_action', { inputSchema: z.object({ key: z.string() }) }, async ({ key }, ctx) => {
    if (ctx.mcpReq.requestState() === undefined) return inputRequired({ requestState: `confirm:${key}` });
    return text(`confirmed ${key}`);
  });
  // The lossy control: a log line first (the SSE response starts), then the work, ignoring the abort signal.
  tool(server, 'slow_report', { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => {
    await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data: 'started' } });
    await sleep(ms);
    return text('reported');
  });
  return server;
};

const handler = createMcpHandler(factory, { legacy: 'reject' });
const mcp = toNodeHandler(handler);

const json = (res, body) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
};

const http = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/mcp') {
    if (req.method === 'POST') {
      // The 2.x client names the method of every request in a header; a notification carries none.
      const method = req.headers['mcp-method'] ? String(req.headers['mcp-method']) : NOTIFICATION;
      bump(truth.http.received, method);
      let finished = false;
      res.once('finish', () => {
        finished = true;
        bump(truth.http.finished, method);
      });
      res.once('close', () => {
        if (!finished) bump(truth.http.closedEarly, method);
      });
    }
    return void mcp(req, res);
  }
  if (path === '/healthz') return res.end('ok');
  if (path === '/__fleet/truth') return json(res, { ...truth, listeners: handler.bus.listenerCount });
  if (path === '/__fleet/publish' && req.method === 'POST') {
    const count = Number(new URL(req.url, 'http://x').searchParams.get('count') ?? 1);
    const listeners = handler.bus.listenerCount;
    for (let i = 0; i < count; i++) handler.notify.toolsChanged();
    truth.publishes += count;
    truth.deliveriesOwed += count * listeners;
    return json(res, { listeners });
  }
  res.statusCode = 404;
  res.end();
});

http.listen(0, '127.0.0.1', () => process.stdout.write(`LISTENING ${http.address().port}\n`));
process.once('SIGTERM', async () => {
  await handler.close().catch(() => {});
  http.closeAllConnections();
  http.close(() => process.exit(0));
});
