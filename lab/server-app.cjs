/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One MCP server process of the fork lab, built with the real MCP SDK. The two entry points (mcp-server.mjs for
// ESM, mcp-server.cjs for CommonJS) set up telemetry first, then load the SDK in their module system and call
// startLabServer with it, so forkwatch's server instrumentation patches the SDK as it would in an app.
//
// Configured by the LAB_SERVER environment variable (JSON):
//   name        'A' | 'B'                      origin written into every notification
//   store       null | { idFormat, unknownCursor } (see event-store.mjs) | 'sdk-example' (the SDK's own store)
//               | { shared: 'memory' | 'redis', keys, redisPort }: one log for every session of the process (memory)
//               or of the fleet (Redis), see boundary/shared-stores.mjs
//   hydrate     accept requests for sessions this process never saw, by creating a transport that claims the
//               session id: the multi-node pattern that makes resumes land on a process without the log
//   ticker      { everyMs, count }: live notifications sent on hydrated sessions
//   keepAliveMs SSE keep-alive comment interval
//   jsonResponse answer POSTs with JSON (enableJsonResponse): only standalone events go through the event store, so
//               a per-session counter numbers the GET stream's events one by one
//   telemetry   true (default): OpenTelemetry SDK + ForkwatchInstrumentation, report on GET /__lab/telemetry
//   instrumentation  ForkwatchInstrumentation config
//   sdk         'v1' (default, @modelcontextprotocol/sdk) | 'v2' (@modelcontextprotocol/server + /node)
//   resolveFrom a folder whose node_modules holds the SDK 1.x version to run (v1 only)
//   metricsPort serve the Prometheus exporter on this port too (GET /__lab/metrics serves the same text on the
//               server's own port)
// The entry points print `LISTENING <port>` on stdout once it accepts connections (announce). startLabServer itself
// only listens and returns the http.Server, so one process can run several (lab/target.mjs does).
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { createRequire } = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

function readServerConfig() {
  return {
    name: 'A',
    store: { idFormat: 'sdk' },
    hydrate: false,
    keepAliveMs: 15000,
    telemetry: true,
    sdk: 'v1',
    ...JSON.parse(process.env.LAB_SERVER ?? '{}'),
  };
}

const forkwatchEntry = moduleSystem => {
  require('./fresh-build.cjs').assertFreshBuild();
  return path.join(__dirname, '..', moduleSystem === 'esm' ? 'build/esm/index.mjs' : 'build/src/index.js');
};

/** The lab's OpenTelemetry set-up (telemetry.cjs), with forkwatch registered: call before loading the SDK. */
function setupServerTelemetry(forkwatch, config) {
  const { setupTelemetry } = require('./telemetry.cjs');
  return setupTelemetry({
    forkwatch,
    instrumentationConfig: config.instrumentation ?? {},
    metricsPort: config.metricsPort,
  });
}

/**
 * Loads the server side of the SDK as an app in `resolveFrom` would, in one module system. For ESM, 1.x files are
 * imported by the URL of their ESM build (dist/esm beside dist/cjs), as the lab clients do.
 */
async function loadServerSdk(config, moduleSystem) {
  const req = createRequire(path.join(config.resolveFrom ?? __dirname, 'resolve-from.js'));
  const rootReq = createRequire(__filename);
  const load = async (spec, r = req) => {
    if (moduleSystem === 'cjs') return r(spec);
    const file = r.resolve(spec).replace(/([\\/])dist\1cjs\1/, '$1dist$1esm$1');
    return import(pathToFileURL(file).href);
  };
  const optional = async (spec, r) => {
    try {
      return await load(spec, r);
    } catch {
      return {};
    }
  };
  // The SDK's own example store is the same code in 1.x and 2.x (2.x does not ship it): always the 1.x file.
  const exampleStore = async r =>
    (await load('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js', r)).InMemoryEventStore;
  if (config.sdk === 'v2') {
    // 2.x packages are imported by name, as an app does: the ESM hooks match the package, not a file inside it.
    const byName = async spec => (moduleSystem === 'cjs' ? rootReq(spec) : import(spec));
    const server = await byName('@modelcontextprotocol/server');
    const node = await byName('@modelcontextprotocol/node');
    const pkg = JSON.parse(
      require('node:fs').readFileSync(
        path.join(path.dirname(rootReq.resolve('@modelcontextprotocol/server')), '../package.json'),
        'utf8',
      ),
    );
    return {
      version: `@modelcontextprotocol/server@${pkg.version}`,
      McpServer: server.McpServer,
      HttpTransport: node.NodeStreamableHTTPServerTransport,
      CoreTransport: server.WebStandardStreamableHTTPServerTransport,
      InMemoryEventStore: await exampleStore(rootReq),
      z: rootReq('zod'),
    };
  }
  const mcp = await load('@modelcontextprotocol/sdk/server/mcp.js');
  const http = await load('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const web = await optional('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
  const pkgFile = req
    .resolve('@modelcontextprotocol/sdk/server/mcp.js')
    .replace(/([\\/])dist\1cjs\1.*$/, '$1package.json');
  const version = JSON.parse(require('node:fs').readFileSync(pkgFile, 'utf8')).version;
  return {
    version: `@modelcontextprotocol/sdk@${version}`,
    McpServer: mcp.McpServer,
    HttpTransport: http.StreamableHTTPServerTransport,
    // From 1.25 the Node transport wraps the web-standard one, which holds the logic (and the patch).
    CoreTransport: web.WebStandardStreamableHTTPServerTransport ?? http.StreamableHTTPServerTransport,
    InMemoryEventStore: await exampleStore(req),
    // zod is only the tools' schema library: its module system does not matter here.
    z: req('zod'),
  };
}

async function startLabServer({ config, sdk, LabEventStore, telemetry, moduleSystem }) {
  const { McpServer, HttpTransport, InMemoryEventStore } = sdk;
  const z = sdk.z.z ?? sdk.z;
  const sessions = new Map();
  const sharedStores = config.store?.shared
    ? (await import('./boundary/shared-stores.mjs')).createSharedStoreFactory({
        backend: config.store.shared,
        ...config.store,
      })
    : undefined;

  function makeStore(sessionId) {
    if (!config.store) return undefined;
    if (config.store === 'sdk-example') return new InMemoryEventStore();
    if (sharedStores) return sharedStores(sessionId);
    return new LabEventStore(config.store);
  }

  async function createSession(claimedSessionId) {
    const session = { seq: 0, transport: undefined, server: undefined };
    // Known before the transport exists, so a store view can be made for the session.
    const sessionId = claimedSessionId ?? randomUUID();
    const transport = new HttpTransport({
      sessionIdGenerator: () => sessionId,
      eventStore: makeStore(sessionId),
      keepAliveMs: config.keepAliveMs,
      ...(config.jsonResponse ? { enableJsonResponse: true } : {}),
      onsessioninitialized: id => sessions.set(id, session),
    });
    const server = new McpServer(
      { name: `fork-lab-${config.name}`, version: '1.0.0' },
      { capabilities: { logging: {} } },
    );
    const notify = (extra, data) => {
      const notification = {
        method: 'notifications/message',
        params: {
          level: 'info',
          logger: config.name,
          data: { origin: config.name, seq: ++session.seq, session: sessionId, ...data },
        },
      };
      // 1.x hands tools `extra.sendNotification`, 2.x `ctx.mcpReq.notify`: notifications on the request's stream.
      const related = extra?.sendNotification?.bind(extra) ?? extra?.mcpReq?.notify?.bind(extra.mcpReq);
      return related ? related(notification) : server.server.notification(notification);
    };
    server.registerTool('emit', { inputSchema: { count: z.number().int() } }, async ({ count }) => {
      // Standalone-stream notifications: stored even while the client is disconnected.
      for (let i = 0; i < count; i++) await notify(undefined, {});
      return { content: [{ type: 'text', text: `emitted ${count}` }] };
    });
    server.registerTool(
      'slow_task',
      { inputSchema: { count: z.number().int(), intervalMs: z.number().int() } },
      async ({ count, intervalMs }, extra) => {
        // Notifications on the request's own POST stream.
        for (let i = 0; i < count; i++) {
          await notify(extra, { stream: 'task' });
          await new Promise(r => setTimeout(r, intervalMs));
        }
        return { content: [{ type: 'text', text: 'task done' }] };
      },
    );
    session.transport = transport;
    session.server = server;
    await server.connect(transport);
    if (claimedSessionId) {
      // Hydration: claim an existing session id without its event log.
      const core = transport._webStandardTransport ?? transport;
      core.sessionId = claimedSessionId;
      core._initialized = true;
      sessions.set(claimedSessionId, session);
      if (config.ticker) startTicker(session, notify);
    }
    return session;
  }

  function startTicker(_session, notify) {
    let sent = 0;
    const timer = setInterval(() => {
      if (sent++ >= config.ticker.count) return clearInterval(timer);
      notify(undefined, { live: true }).catch(() => {});
    }, config.ticker.everyMs);
  }

  async function readBody(req) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString('utf8');
    return text ? JSON.parse(text) : undefined;
  }

  /** What this process's forkwatch recorded: the server's view of the scenario. */
  async function telemetryReport() {
    const patched = sdk.CoreTransport?.prototype?.handleGetRequest?.__wrapped === true;
    if (!telemetry) return { moduleSystem, sdkVersion: sdk.version, sdkPatched: patched, spans: [], metrics: '' };
    // The probe reads fields only, so the CJS build's serves the ESM build's instance too.
    const { probeServerDelivery } = require(path.join(__dirname, '..', 'build/src/server/server-delivery.js'));
    const serverDelivery = probeServerDelivery(telemetry.instrumentation.serverDelivery);
    const delivery = {
      sessionsWithPending: serverDelivery.sessionsWithPending,
      awaitingVerdict: serverDelivery.streamsInWindow(),
    };
    return {
      moduleSystem,
      sdkVersion: sdk.version,
      sdkPatched: patched,
      spans: telemetry.finishedSpans(),
      metrics: await telemetry.scrape(),
      delivery,
    };
  }

  const httpServer = createServer(async (req, res) => {
    try {
      if (req.url === '/__lab/close-sessions') {
        // The application expiring its sessions (no DELETE from the client): transport.close() on each.
        for (const s of new Set(sessions.values())) await s.transport?.close();
        sessions.clear();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      if (req.url === '/__lab/metrics') {
        // The Prometheus text of this process's forkwatch, for scrapers (forkwatch drill --server-metrics).
        res
          .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
          .end(telemetry ? await telemetry.scrape() : '');
        return;
      }
      if (req.url === '/__lab/standalone-streams') {
        // Sessions whose standalone GET stream has a connection here, as the transport itself holds it: a scenario
        // that cuts that stream waits for this process to have seen the drop before it sends what the client misses.
        const mapped = s => {
          const core = s.transport?._webStandardTransport ?? s.transport;
          return core?._streamMapping?.has?.(core._standaloneSseStreamId ?? '_GET_stream') === true;
        };
        const open = [...new Set(sessions.values())].filter(mapped).length;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ open }));
        return;
      }
      if (req.url === '/__lab/telemetry') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await telemetryReport()));
        return;
      }
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      const sessionId = req.headers['mcp-session-id'];
      let session = sessionId ? sessions.get(sessionId) : undefined;
      if (!session && !sessionId && req.method === 'POST') session = await createSession();
      else if (!session && sessionId && config.hydrate) session = await createSession(sessionId);
      if (!session) {
        // The application's own 404, before any transport sees the request: forkwatch's server patch cannot see it.
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      await session.transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  });

  await new Promise(resolve => httpServer.listen(0, '127.0.0.1', resolve));
  return httpServer;
}

/** What the entry points do once the server listens: the harness waits for this line. */
function announce(httpServer) {
  process.stdout.write(`LISTENING ${httpServer.address().port}\n`);
  process.on('SIGTERM', () => process.exit(0));
}

module.exports = { readServerConfig, forkwatchEntry, setupServerTelemetry, loadServerSdk, startLabServer, announce };
