/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One replica of a multi-replica MCP server (@modelcontextprotocol/sdk 1.x, streamable HTTP) that serves any
// session from Redis: the session registry and the event log are in Redis, so a request, a resume or a DELETE may
// reach any replica (after a restart, a failover, a rebalance, or behind round-robin).
//
// Only public SDK API:
// - the web-standard transport (`WebStandardStreamableHTTPServerTransport`) behind `@hono/node-server`'s
//   `getRequestListener`, which is exactly what the SDK's Node `StreamableHTTPServerTransport.handleRequest` does;
// - a session this replica never saw is *hydrated* by replaying the client's own initialize request (kept in the
//   registry) through `handleRequest` on a fresh transport whose `sessionIdGenerator` returns the session's id,
//   then `notifications/initialized`. The SDK then holds the session exactly as the replica that initialized it:
//   same id, same negotiated protocol version, same client capabilities. The alternative seen in the wild, setting
//   the private fields `_webStandardTransport.sessionId` and `_initialized`, skips the negotiation and breaks
//   silently when the SDK renames them. The price: the replayed initialize's response (and the priming event of
//   protocol 2025-11-25) go to the event store under that throwaway request stream; nobody ever replays them.
// - `createMcpExpressApp` keeps the SDK's DNS-rebinding protection (Host must be an allowed name): a balancer's
//   health check must send one (HAProxy: `http-check send ... hdr Host localhost`), and nginx must forward the
//   client's Host (`proxy_set_header Host $host`), or every request is answered 403.
//
// createReplica({ redis, buildServer, eventStoreFor?, host?, allowedHosts?, keepAliveMs?, sessionTtlMs? }) ->
//   { app, handleMcp, sessions, drain(), close({ settleMs? }) }: `app` (the SDK's express app, with GET /healthz) is yours to
//   add routes and middleware to; mount the MCP endpoint with `app.all('/mcp', handleMcp)` and `app.listen(...)`.
//   buildServer(): a new McpServer with your tools (one per session, as the SDK requires);
//   eventStoreFor(sessionId): the session's store (default: a RedisEventStore on `redis`).
const { randomUUID } = require('node:crypto');
const { getRequestListener } = require('@hono/node-server');
const { createMcpExpressApp } = require('@modelcontextprotocol/sdk/server/express.js');
const {
  WebStandardStreamableHTTPServerTransport,
} = require('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { RedisEventStore } = require('./redis-event-store.cjs');

const registryKey = sessionId => `fw:{${sessionId}}:session`;

function jsonRpcError(res, status, code, message) {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

function createReplica({
  redis,
  buildServer,
  eventStoreFor = sessionId => new RedisEventStore(redis, { sessionId }),
  host = '127.0.0.1',
  allowedHosts,
  keepAliveMs,
  sessionTtlMs = 60 * 60_000,
}) {
  const app = createMcpExpressApp({ host, allowedHosts });
  const sessions = new Map(); // session id -> { transport, server, store }
  const hydrating = new Map(); // session id -> Promise of its session (concurrent first requests share one)
  let draining = false;
  // Requests other than GET being answered here: a rolling restart ends the streams only after they are done.
  let inflight = 0;
  const settled = new Set(); // resolvers waiting for inflight to reach 0

  // For the balancer: 503 while draining, so it stops sending new sessions here before the process stops.
  app.get('/healthz', (_req, res) => res.status(draining ? 503 : 200).json({ ok: !draining, sessions: sessions.size }));

  async function open(sessionId, initialize) {
    const store = eventStoreFor(sessionId);
    const server = buildServer();
    const session = { server, store, transport: undefined };
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId,
      eventStore: store,
      ...(keepAliveMs ? { keepAliveMs } : {}),
    });
    session.transport = transport;
    transport.onclose = () => {
      if (sessions.get(sessionId) === session) sessions.delete(sessionId);
    };
    await server.connect(transport);
    if (initialize) {
      // Hydration: the client's own initialize, answered into the void.
      const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
      const answer = await transport.handleRequest(
        new Request('http://localhost/mcp', { method: 'POST', headers, body: JSON.stringify(initialize) }),
      );
      // Read the answer to its end: cancelling it early would leave the initialize response stored for a stream
      // that no longer has a connection (forkwatch's delivery ledger would rightly count it undelivered).
      await answer.text();
      if (!transport.sessionId) throw new Error(`hydrating session ${sessionId}: initialize answered ${answer.status}`);
      const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
      const version = initialize.params?.protocolVersion;
      await transport.handleRequest(
        new Request('http://localhost/mcp', {
          method: 'POST',
          headers: { ...headers, 'mcp-session-id': sessionId, ...(version ? { 'mcp-protocol-version': version } : {}) },
          body: JSON.stringify(initialized),
        }),
      );
    }
    sessions.set(sessionId, session);
    return session;
  }

  /** The session for an id: here, or hydrated from the registry; undefined when the fleet does not know it. */
  async function find(sessionId) {
    const here = sessions.get(sessionId);
    if (here) return here;
    let pending = hydrating.get(sessionId);
    if (!pending) {
      pending = (async () => {
        const initialize = await redis.get(registryKey(sessionId));
        return initialize ? open(sessionId, JSON.parse(initialize)) : undefined;
      })().finally(() => hydrating.delete(sessionId));
      hydrating.set(sessionId, pending);
    }
    return pending;
  }

  /** Hands one Node request to the session's web-standard transport, as the SDK's Node transport does. */
  function serve(session, req, res) {
    const listener = getRequestListener(
      webRequest => session.transport.handleRequest(webRequest, { parsedBody: req.body, authInfo: req.auth }),
      { overrideGlobalObjects: false },
    );
    return listener(req, res);
  }

  async function handleMcp(req, res) {
    // Draining: every connection carries this one request only, so a balancer's kept-alive connection (nginx's
    // upstream keepalive) brings nothing more here once the process stops listening.
    if (draining) res.setHeader('Connection', 'close');
    if (req.method !== 'GET') {
      inflight++;
      res.once('close', () => {
        if (--inflight === 0) for (const resolve of settled) resolve();
      });
    }
    try {
      const sessionId = req.headers['mcp-session-id'];
      if (!sessionId) {
        if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
          return jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        }
        const id = randomUUID();
        const session = await open(id);
        await redis.set(registryKey(id), JSON.stringify(req.body), { PX: sessionTtlMs });
        return await serve(session, req, res);
      }
      const session = await find(String(sessionId));
      if (!session) return jsonRpcError(res, 404, -32001, 'Session not found');
      if (req.method === 'DELETE') {
        await serve(session, req, res);
        sessions.delete(String(sessionId));
        await Promise.all([redis.del(registryKey(String(sessionId))), session.store.forget?.()]);
        return;
      }
      redis.pExpire(registryKey(String(sessionId)), sessionTtlMs).catch(() => {});
      return await serve(session, req, res);
    } catch (error) {
      if (!res.headersSent) jsonRpcError(res, 500, -32603, `Internal error: ${error?.message ?? error}`);
    }
  }

  return {
    app,
    handleMcp,
    sessions,
    /** Fails the health check, so the balancer moves new traffic away; open streams stay until close(). */
    drain() {
      draining = true;
    },
    /**
     * Closes every session's transport here (their state stays in Redis for the other replicas), once the requests
     * in flight are answered (at most `settleMs`): an event a tool call stores after its session's stream ended here
     * would be written nowhere, and the client's resume on another replica may already have replayed the log without
     * it. Call it after the server stopped listening (`http.close()`), so no new request arrives meanwhile.
     */
    async close({ settleMs = 10_000 } = {}) {
      if (inflight > 0) {
        let resolve;
        const done = new Promise(r => {
          resolve = r;
          settled.add(r);
        });
        const timer = setTimeout(resolve, settleMs);
        await done;
        clearTimeout(timer);
        settled.delete(resolve);
      }
      await Promise.allSettled([...sessions.values()].map(s => s.transport.close()));
      sessions.clear();
    },
  };
}

module.exports = { createReplica, registryKey };
