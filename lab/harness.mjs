/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Runs fork-lab scenarios: starts the MCP server processes and the proxy, then a client process (CommonJS or
// ESM) that plays the app, and returns the client's report with, under `servers`, what forkwatch recorded in each
// server process (the server's view). Used by the README's fork lab and by the tests.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProxy } from './proxy.mjs';
import freshBuild from './fresh-build.cjs';

const here = dirname(fileURLToPath(import.meta.url));
const { assertFreshBuild } = freshBuild;

/**
 * A store that falls through to a fresh stream (Cloudflare agents' McpAgent does) returns a stream id for a cursor it
 * never stored and replays nothing. The server has only the store's word, so this is `replayed` with 0 events; the
 * fork shows on the client (its first frame) and both are in one trace.
 */
const FRESH_STORE_STORY =
  "B: replayed, 0 events (the store vouched for a cursor it never stored; the client's verdict catches it)";

/**
 * Server B configurations, by scenario. Server A has a correct event store, except in sdk-store-same-process.
 * `serverStory` is what forkwatch's server instrumentation reports in the server processes (the server's view).
 */
export const SCENARIOS = {
  healthy: {
    a: {},
    b: null,
    client: 'healthy',
    story: 'the resume lands on the process that holds the log',
    serverStory: 'A: replayed, with the exact number of events the client missed',
  },
  'silent-fork': {
    a: {},
    b: { store: 'sdk-example', hydrate: true, keepAliveMs: 200 },
    client: 'silent-fork',
    story: "the resume lands on a process with the SDK's own store and no log: 200, keep-alives only",
    serverStory: "B: unknown_cursor (the store returned '' and the SDK still answered 200)",
  },
  'live-fork-sdk-ids': {
    a: {},
    b: { store: { idFormat: 'sdk', unknownCursor: 'fresh' }, hydrate: true, ticker: { everyMs: 150, count: 2 } },
    client: 'post-stream-fork',
    story: 'a tool call stream resumes on a process that opens a fresh stream with live events (SDK-format ids)',
    serverStory: FRESH_STORE_STORY,
  },
  'live-fork-integer-ids': {
    a: { store: { idFormat: 'integer' } },
    b: { store: { idFormat: 'integer', unknownCursor: 'fresh' }, hydrate: true, ticker: { everyMs: 150, count: 2 } },
    client: 'live-fork',
    story: 'the resume lands on a process whose integer ids start again from 1',
    serverStory: FRESH_STORE_STORY,
  },
  'fork-then-return': {
    a: { store: { idFormat: 'hex-sequence' } },
    b: {
      store: { idFormat: 'hex-sequence', unknownCursor: 'fresh' },
      hydrate: true,
      ticker: { everyMs: 150, count: 2 },
    },
    client: 'fork-then-return',
    story: 'after a fork, the next reconnect returns to the first process, which replays from the wrong cursor',
    serverStory: `${FRESH_STORE_STORY}; then A: replayed, from its own event that has the id of B's (the ids collide)`,
  },
  'fail-loud': {
    a: { store: { idFormat: 'integer' } },
    b: { store: { idFormat: 'integer', unknownCursor: 'fresh' }, hydrate: true, ticker: { everyMs: 150, count: 2 } },
    client: 'fail-loud',
    instrumentation: { onFork: 'abort' },
    story: "the integer-id fork again, with forkwatch's fail-loud mode on",
    serverStory: FRESH_STORE_STORY,
  },
  'live-fork-no-store': {
    a: {},
    b: { store: null, hydrate: true, ticker: { everyMs: 150, count: 2 } },
    client: 'live-fork',
    story: 'the resume lands on a process without an event store, which ignores Last-Event-ID',
    serverStory: 'B: ignored (no event store: the SDK dropped Last-Event-ID and opened a fresh stream with 200)',
  },
  'rejected-400': {
    a: {},
    b: { store: { idFormat: 'sdk', unknownCursor: 'validate' }, hydrate: true },
    client: 'rejected',
    story: 'the resume lands on a process that validates cursors: 400',
    serverStory: 'B: rejected (400 from getStreamIdForEventId), once per attempt',
  },
  'rejected-404': {
    a: {},
    b: { hydrate: false },
    client: 'rejected',
    story: 'the resume lands on a process without the session: 404',
    serverStory:
      "nothing: the application's router answers 404 before any transport sees the request (client and HTTP metrics only)",
  },
  'rejected-409': {
    a: { store: { idFormat: 'sdk', unknownCursor: 'validate' } },
    b: null,
    client: 'rejected',
    resumeTo: 'A',
    story: 'the resume reaches the right process while the old stream is still open there: 409',
    serverStory: 'A: rejected (409: the stream still has a connection), once per attempt',
  },
  'vouching-store-clean-cut': {
    a: { store: { idFormat: 'integer' } },
    b: { store: { idFormat: 'integer', unknownCursor: 'fresh' }, hydrate: true },
    client: 'fork-clean-cut',
    story: 'the standalone stream resumes on B, whose store vouches for the unknown cursor; A then gets the events',
    serverStory: "B: replayed, 0 events; A: its events for the session's standalone stream stream_moved",
  },
  'silent-fork-clean-cut': {
    a: {},
    b: { store: 'sdk-example', hydrate: true, keepAliveMs: 200 },
    client: 'fork-clean-cut',
    story: "the standalone stream resumes on B (the SDK's store, no log); A then gets the events",
    serverStory: 'B: unknown_cursor; A: stream_moved',
  },
  'no-store-clean-cut': {
    a: {},
    b: { store: null, hydrate: true },
    client: 'fork-clean-cut',
    story: 'the standalone stream resumes on B, which has no store; A then gets the events',
    serverStory: 'B: ignored; A: stream_moved',
  },
  'split-brain': {
    a: { store: { idFormat: 'integer' } },
    b: { store: { idFormat: 'integer' }, hydrate: true },
    client: 'split-brain',
    story: 'round-robin POSTs with no resume: the GET stream sits on A, half the tool calls run on B',
    serverStory: "B: no_listener for every notification of the session's standalone stream",
  },
  'no-get-stream': {
    a: { store: { idFormat: 'integer' } },
    b: null,
    routes: { get: 'refuse' },
    client: 'no-get-stream',
    judgedByServers: true,
    story:
      'a gateway answers the GET stream 405, so the client never listens: every notification of the session is lost',
    serverStory: 'A: no_listener for every notification of the standalone stream (the session never opened a GET here)',
  },
  // Issue 45's client-only silent forks: the resume lands on a process without the log that answers 200 and sends
  // nothing; the stream is cut after 500 ms; the SDK reconnects without Last-Event-ID (typescript-sdk #2499) to the
  // process with the log and gets live events; the 7 events sent while away are lost.
  'frameless-resume-cut-sdk-ids': {
    a: {},
    b: { store: { idFormat: 'sdk', unknownCursor: 'empty' }, hydrate: true },
    client: 'frameless-resume-cut',
    story: 'a frame-less 200 from a process without the log, cut after 500 ms; the cursor-less reconnect reaches A',
    serverStory: 'B: unknown_cursor; A: the 7 events stored while away stream_moved (no replay can come)',
  },
  'frameless-resume-cut-integer-ids': {
    a: { store: { idFormat: 'integer' }, jsonResponse: true },
    b: { store: { idFormat: 'integer', unknownCursor: 'empty' }, hydrate: true, jsonResponse: true },
    client: 'frameless-resume-cut',
    story: 'the same with per-session integer ids (1-5 one by one, cursor 5, the cursor-less stream starts at 13)',
    serverStory: 'B: unknown_cursor; A: the 7 events stored while away stream_moved (no replay can come)',
  },
  'sdk-store-same-process': {
    a: { store: 'sdk-example', keepAliveMs: 200 },
    b: null, // the proxy's route B is process A: the resume lands on the process that holds the log
    client: 'silent-fork',
    story:
      "one process with the SDK's own InMemoryEventStore: even a resume on the process that holds the log gets 200 and keep-alives only",
    serverStory:
      "A: unknown_cursor, although A stored that cursor: the store's `_GET_stream` split bug (SDK issues #943, #2560)",
  },
};

/**
 * Starts one lab server process. options.moduleSystem: 'esm' (default, mcp-server.mjs, with the loader hooks when
 * telemetry is on) or 'cjs' (mcp-server.cjs).
 */
export async function startServer(config, options = {}) {
  // Here too (the server process checks as well), so a stale build fails the test with its own message.
  if (config.telemetry !== false) assertFreshBuild();
  const cjs = options.moduleSystem === 'cjs';
  const telemetry = config.telemetry !== false;
  const args = cjs
    ? [join(here, 'mcp-server.cjs')]
    : [...(telemetry ? ['--import', join(here, 'esm-hooks.mjs')] : []), join(here, 'mcp-server.mjs')];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, LAB_SERVER: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    // Generous: on a loaded 2-core machine a Node start with the SDK and loader hooks can take many seconds.
    const timer = setTimeout(() => reject(new Error('lab server did not start within 60 s')), 60_000);
    child.stdout.on('data', chunk => {
      out += chunk;
      const m = /LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', code => reject(new Error(`lab server exited with ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    /** What forkwatch recorded in this process: { moduleSystem, sdkVersion, sdkPatched, spans, metrics }. */
    async telemetry() {
      const res = await fetch(`${url}/__lab/telemetry`);
      if (!res.ok) throw new Error(`lab server telemetry: HTTP ${res.status}`);
      return res.json();
    },
    /** The application expires its sessions (transport.close(), no DELETE). */
    closeSessions: () => fetch(`${url}/__lab/close-sessions`).then(r => r.json()),
    stop: () => child.kill('SIGTERM'),
  };
}

/** The server options of runLabScenario, as LAB_SERVER keys (only those that are set). */
function serverOverrides(options) {
  const overrides = {
    telemetry: options.serverTelemetry,
    sdk: options.serverSdk,
    resolveFrom: options.serverResolveFrom,
    instrumentation: options.serverInstrumentation,
  };
  return Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
}

/**
 * The server's view of a report, per server process, from its metrics and spans: resumes by outcome, the outcome
 * and the events replayed of each resume span, and the events the server stored or sent.
 */
export function serverView(servers = {}) {
  const view = {};
  for (const [name, server] of Object.entries(servers)) {
    const resumes = {};
    let events = 0;
    for (const line of String(server.metrics ?? '').split('\n')) {
      const resume = /^forkwatch_server_resumes_total\{.*outcome="([a-z_]+)".*\} (\d+)/.exec(line);
      if (resume) resumes[resume[1]] = Number(resume[2]);
      const stored = /^forkwatch_server_events_total\{.*\} (\d+)/.exec(line);
      if (stored) events += Number(stored[1]);
    }
    const spans = (server.spans ?? []).filter(s => s.name === 'forkwatch.server.resume');
    view[name] = {
      resumes,
      outcomes: spans.map(s => s.attributes['forkwatch.replay.outcome']),
      replayedEvents: spans.map(s => s.attributes['forkwatch.replay.events'] ?? null),
      events,
    };
  }
  return view;
}

/**
 * Runs one scenario end to end and returns the client's report, with `servers: { A, B }` (B only when the scenario
 * has a second process): each { moduleSystem, sdkVersion, sdkPatched, spans, metrics }, fetched before they stop.
 * options: moduleSystem 'cjs' | 'esm' (client and servers), instrumentation (ForkwatchInstrumentation config),
 * verdictTimeoutMs, resolveFrom (a folder whose node_modules holds the SDK version to test), metricsPort,
 * client: 'sdk' (default), 'ai-sdk' (@ai-sdk/mcp from resolveFrom: healthy, live-fork-integer-ids, fail-loud),
 * 'mcp-remote' (its process, from resolveFrom, driven over stdio: the AI SDK client's steps) or 'stack' (the client
 * stack `stack` of lab/stacks/client-stacks.mjs from resolveFrom, ESM).
 * serverA: overrides of server A's configuration (e.g. `{ store: { idFormat: 'integer' } }` for ids that prove order).
 * Server options: serverTelemetry (default true), serverSdk 'v1' | 'v2', serverResolveFrom (an SDK 1.x folder for
 * the servers), serverInstrumentation (their ForkwatchInstrumentation config), deliveryVerdicts (the client
 * pings the servers once more after the delivery window, as a live client would, then no stream may still be in
 * its window), closeSessions (the servers then expire their sessions, no DELETE).
 */
export async function runLabScenario(name, options = {}) {
  const scenario = SCENARIOS[name];
  if (!scenario) throw new Error(`unknown scenario ${name}`);
  const servers = {};
  const work = mkdtempSync(join(tmpdir(), 'fork-lab-'));
  let proxy;
  try {
    const serverOptions = { moduleSystem: options.moduleSystem ?? 'cjs' }; // the client's default too
    const a = { name: 'A', ...scenario.a, ...options.serverA, ...serverOverrides(options) };
    servers.A = await startServer(a, serverOptions);
    if (scenario.b)
      servers.B = await startServer({ name: 'B', ...scenario.b, ...serverOverrides(options) }, serverOptions);
    proxy = await startProxy(
      { A: servers.A.url, B: (servers.B ?? servers.A).url },
      { post: 'A', get: 'A', resume: 'A', ...scenario.routes },
    );
    const reportFile = join(work, 'report.json');
    const esm = options.moduleSystem === 'esm';
    const args =
      options.client === 'ai-sdk'
        ? [join(here, esm ? 'ai-sdk-client.mjs' : 'ai-sdk-client.cjs')]
        : options.client === 'stack'
          ? ['--import', join(here, 'esm-hooks.mjs'), join(here, 'stacks/stack-client.mjs')]
          : options.client === 'mcp-remote'
            ? [join(here, 'mcp-remote-client.cjs')]
            : esm
              ? ['--import', join(here, 'esm-hooks.mjs'), join(here, 'client.mjs')]
              : [join(here, 'client.cjs')];
    const env = {
      ...process.env,
      LAB_REPORT: reportFile,
      LAB_CLIENT: JSON.stringify({
        proxyUrl: proxy.url,
        scenario:
          options.client === 'ai-sdk' || options.client === 'mcp-remote'
            ? (scenario.aiSdkClient ?? scenario.client)
            : scenario.client,
        resumeTo: scenario.resumeTo ?? 'B',
        listens: scenario.routes?.get !== 'refuse',
        verdictTimeoutMs: options.verdictTimeoutMs ?? 1500,
        // A live client goes on talking: its servers' overdue events count only on a request after the window.
        keepTalkingAfterMs: options.deliveryVerdicts
          ? (options.serverInstrumentation?.deliveryWindowMs ?? 30000) + 300
          : 0,
        instrumentation: { ...scenario.instrumentation, ...options.instrumentation },
        metricsPort: options.metricsPort,
        resolveFrom: options.resolveFrom,
        sdk: options.sdk,
        stack: options.stack,
      }),
    };
    const { code, stderr } = await new Promise(resolve => {
      const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'inherit', 'pipe'] });
      let err = '';
      child.stderr.on('data', c => (err += c));
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 45000);
      child.on('exit', c => {
        clearTimeout(timer);
        resolve({ code: c, stderr: err });
      });
    });
    if (code !== 0)
      throw new Error(`lab client (${name}, ${options.moduleSystem ?? 'cjs'}) exited ${code}:\n${stderr}`);
    const serverReports = {};
    if (options.serverTelemetry !== false && options.deliveryVerdicts) {
      // Every delivery verdict that is coming has come: no session stream awaits its window any more.
      const deadline = Date.now() + 20000;
      for (const server of Object.values(servers)) {
        while ((await server.telemetry()).delivery?.awaitingVerdict > 0) {
          if (Date.now() > deadline) throw new Error('delivery verdicts did not come');
          await new Promise(r => setTimeout(r, 50));
        }
      }
    }
    if (options.closeSessions) for (const server of Object.values(servers)) await server.closeSessions();
    if (options.serverTelemetry !== false) {
      for (const [key, server] of Object.entries(servers)) serverReports[key] = await server.telemetry();
    }
    return {
      ...JSON.parse(readFileSync(reportFile, 'utf8')),
      name,
      story: scenario.story,
      serverStory: scenario.serverStory,
      stderr,
      servers: serverReports,
    };
  } finally {
    await proxy?.close();
    for (const s of Object.values(servers)) s.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
