/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe against real MCP servers (the SDK's own transports) on 127.0.0.1, one deployment shape per test.
 * The probe runs in-process here; probe-cli.e2e.test.ts runs the built binary.
 */
import { type Server, createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runProbeCli } from '../../src/cli/probe/cli';
import type { ProbeReport } from '../../src/cli/probe/report';
import { type RoundRobinProxy, startRoundRobinProxy } from './fixtures/round-robin-proxy';
import { type FixtureServer, startFixture } from './fixtures/servers';

/** Short enough for silent streams to cost little, long enough for a loaded CI machine to answer real replays. */
const TIMEOUT_MS = 1500;
const servers: FixtureServer[] = [];
const proxies: RoundRobinProxy[] = [];

async function fixture(file: string, args: string[] = []): Promise<FixtureServer> {
  const server = await startFixture(file, args);
  servers.push(server);
  return server;
}

async function probe(url: string, ...extra: string[]): Promise<{ code: number; report: ProbeReport; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runProbeCli([url, '--json', '--timeout', String(TIMEOUT_MS), ...extra], {
    stdout: text => (stdout += text),
    stderr: text => (stderr += text),
    env: {},
  });
  return { code, report: JSON.parse(stdout) as ProbeReport, stderr };
}

afterAll(async () => {
  await Promise.all(proxies.map(p => p.close()));
  await Promise.all(servers.map(s => s.stop()));
});

describe('single process', () => {
  test('a store that validates cursors: every condition passes, exit 0', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'validating']);
    const { code, report } = await probe(server.url, '--resumes', '5');
    expect(code).toBe(0);
    expect(report.verdict).toBe('resumable');
    expect(report.protocol.negotiated).toBe('2025-11-25');
    expect(report.conditions.event_ids.status).toBe('pass');
    expect(report.conditions.replay.status).toBe('pass');
    // Same stream, next id: the dense hex sequence lets the core verdict verify continuity.
    const first = report.conditions.replay.evidence!.attempt as { firstEventId: string; continuityVerified: boolean };
    expect(first.firstEventId).toBe(report.cursor.expectedEventId);
    expect(first.continuityVerified).toBe(true);
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'pass', evidence: { status: 400 } });
    expect(report.resumes.outcomes.resumed).toBe(5);
    expect(report.resumes.forkedRatio).toBe(0);
    // Each repeated resume continues a ping of its own: five streams, each replayed its own response once.
    expect(Object.values(report.resumes.firstEventIds)).toEqual([1, 1, 1, 1, 1]);
    expect(report.resumes.details.every(d => d.replayedResponse && d.continuityVerified)).toBe(true);
  });

  test("the SDK's example InMemoryEventStore: answers an unknown cursor with a silent 200", async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'sdk-example']);
    const { code, report } = await probe(server.url, '--resumes', '3');
    expect(code).toBe(1);
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'fail', evidence: { status: 200 } });
    expect(report.conditions.bogus_cursor_refused.detail).toMatch(/silent stream/);
    // The remedy named for this store by its id shape: the lookup it lacks.
    expect(report.conditions.bogus_cursor_refused.cause).toBe('unknown_cursor_served_example_store');
    expect(report.conditions.bogus_cursor_refused.fix).toMatch(/implement `getStreamIdForEventId`/);
    // The bogus cursor imitates the SDK's `<uuid>_<ms>_<rand>` shape.
    expect(report.cursor.bogus).toMatch(/^[0-9a-f-]{36}_[0-9]{13}_[0-9a-z]{8}$/);
    // The store replays in id order; when the priming event and the response share a millisecond, their random
    // suffixes decide, and the response can sort before its cursor and never be replayed (the next test forces it).
    const replayable = report.cursor.real!.localeCompare(report.cursor.expectedEventId!) < 0;
    expect(report.conditions.replay.status).toBe(replayable ? 'pass' : 'fail');
    // Each repeated resume has a ping of its own, each with the same coin toss: resumed or silently lost.
    expect(report.resumes.outcomes.resumed + report.resumes.outcomes.forked).toBe(3);
    for (const d of report.resumes.details.filter(d => d.outcome === 'forked'))
      expect(['no_frame', 'eof_without_frames']).toContain(d.reason);
  });

  test("the same store when the response shares the priming event's millisecond: the response is lost", async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'sdk-example', '--same-millisecond']);
    const { code, report } = await probe(server.url, '--resumes', '2', '--timeout', '800');
    expect(code).toBe(1);
    expect(report.conditions.event_ids.status).toBe('pass');
    expect(report.conditions.replay.status).toBe('fail');
    // Silent, or ended by the server when the next pipelined resume took the stream over: either way no replay.
    expect(report.conditions.replay.detail).toMatch(/no frame|without a frame/);
    expect(report.resumes.forkedRatio).toBe(1);
    // The response's id sorts before its cursor's: the store's id order, named as such.
    expect(report.conditions.replay.cause).toBe('example_store_id_order');
    expect(report.conditions.repeated_resumes.cause).toBe('example_store_id_order');
  });

  test('no event store: no ids, and Last-Event-ID is ignored (200 with a fresh stream)', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'none']);
    const { code, report } = await probe(server.url);
    expect(code).toBe(1);
    expect(report.conditions.event_ids.status).toBe('fail');
    expect(report.conditions.event_ids.fix).toMatch(/configure an event store/);
    expect(report.conditions.replay.status).toBe('not_tested');
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'fail', evidence: { status: 200 } });
    expect(report.verdict).toBe('not_resumable');
  });
});

describe('the standalone GET stream', () => {
  test("the SDK example store with getStreamIdForEventId added: NOT RESUMABLE, the standalone stream's resume replays nothing", async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'sdk-example-lookup']);
    const { code, report } = await probe(server.url, '--resumes', '3');
    expect(code).toBe(1);
    expect(report.verdict).toBe('not_resumable');
    // getStreamIdForEventId makes unknown cursors a 400 now.
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'pass', evidence: { status: 400 } });
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('roots_list_changed');
    expect(standalone.cursor.real).toMatch(/^_GET_stream_\d{13}_/);
    expect(standalone.conditions.event_ids.status).toBe('pass');
    // The server's own cursor is accepted (200)...
    expect(standalone.conditions.cursor_accepted.status).toBe('pass');
    // ...but '_GET_stream_…'.split('_')[0] is '': nothing replayed, and the stream is registered under ''.
    expect(standalone.conditions.replay.status).toBe('fail');
    expect(standalone.conditions.replay.detail).toMatch(/replayed nothing/);
    expect(standalone.conditions.continues.status).toBe('fail');
    // Both named for what the store does with `_GET_stream_…` ids, and the remedy says how to key events.
    expect(standalone.conditions.replay.cause).toBe('example_store_get_stream');
    expect(standalone.conditions.continues.cause).toBe('example_store_get_stream');
    expect(standalone.conditions.replay.fix).toMatch(/^key events per stream/);
    // The first resume lost the events already: not resumed again and again (each would wait out the silence).
    expect(standalone.conditions.repeated_resumes.status).toBe('not_tested');
    expect(standalone.resumes.attempts).toBe(0);
    expect(report.summary).toMatch(/standalone replay/);
  });

  test('a validating store, events made by --notify-tool: every standalone condition passes', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'validating', '--notify', 'tool']);
    const { code, report } = await probe(server.url, '--resumes', '3', '--notify-tool', 'notify');
    expect(code).toBe(0);
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('notify_tool');
    expect(standalone.verdict).toBe('resumable');
    for (const c of Object.values(standalone.conditions)) expect(c.status).toBe('pass');
    // The tool sends two notifications and is called twice before the cursor (its events are the probe's own only
    // if they come again): the cursor is the fourth, and the first missed one comes first.
    expect(standalone.cursor).toMatchObject({ real: '_GET_stream:00000004', source: 'event' });
    expect(standalone.conditions.replay.detail).toContain('_GET_stream:00000005');
    expect(standalone.resumes.outcomes.resumed).toBe(3);
    expect(standalone.conditions.bogus_cursor_refused).toMatchObject({ status: 'pass', evidence: { status: 400 } });
  });

  // Opaque ids (UUIDs, as @hono/mcp's store has) prove nothing about order, and a server that keeps sending live
  // events puts frames on any stream it answers: only the events the probe itself made while away prove a replay.
  test('opaque ids and live traffic, the log replayed: the replay passes on the events the probe made while away', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'uuid', '--notify', 'tool', '--live', '200']);
    const { report } = await probe(server.url, '--resumes', '1', '--notify-tool', 'notify');
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('notify_tool');
    expect(standalone.cursor.real).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(standalone.conditions.cursor_accepted.status).toBe('pass');
    expect(standalone.conditions.replay).toMatchObject({ status: 'pass' });
    expect(standalone.conditions.replay.detail).toMatch(/made while away.*replayed/);
  });

  test('opaque ids and live traffic, a log that starts afresh: live events after the resume are not a replay', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'uuid-fresh-log', '--notify', 'tool', '--live', '200']);
    const { code, report } = await probe(server.url, '--resumes', '1', '--notify-tool', 'notify');
    const standalone = report.streams.standalone;
    expect(standalone.trigger).toBe('notify_tool');
    expect(standalone.conditions.cursor_accepted.status).toBe('pass');
    expect(standalone.conditions.replay.status).toBe('fail');
    expect(standalone.conditions.replay.detail).toMatch(/none of the events the probe made while away/);
    expect(standalone.verdict).not.toBe('resumable');
    expect(code).toBe(1);
  });

  test('a server the probe cannot make send on its GET stream: untestable there, never a pass (exit 2)', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'validating', '--notify', 'none']);
    const { code, report } = await probe(server.url, '--resumes', '2', '--timeout', '600');
    expect(report.streams.request.verdict).toBe('resumable');
    const standalone = report.streams.standalone;
    expect(standalone.verdict).toBe('untestable');
    expect(standalone.trigger).toBeNull();
    for (const c of Object.values(standalone.conditions)) expect(c.status).toBe('not_tested');
    expect(standalone.conditions.event_ids.detail).toMatch(/could not make the server send.*--notify-tool/);
    expect(standalone.tried.join('\n')).toMatch(/roots\/list_changed: nothing arrived/);
    expect(report.verdict).toBe('untestable');
    expect(code).toBe(2);
  });

  test('--streams request leaves the standalone stream out, plainly (not applicable, not a pass)', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'validating', '--notify', 'none']);
    const { code, report } = await probe(server.url, '--resumes', '2', '--streams', 'request');
    expect(code).toBe(0);
    expect(report.streams.standalone.verdict).toBe('not_applicable');
    expect(report.streams.standalone.conditions.replay.detail).toMatch(/not probed/);
    expect(report.steps.some(s => s.step.startsWith('standalone'))).toBe(false);
  });
});

describe('two processes behind a round-robin proxy', () => {
  test('per-process logs: resumes that land on the other replica fork silently, and the share is reported', async () => {
    // SDK-shaped ids, unknown cursors served 200 (like the SDK example store), replay in insertion order.
    const a = await fixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']);
    const b = await fixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']);
    const proxy = await startRoundRobinProxy([a.port, b.port]);
    proxies.push(proxy);
    const { code, report } = await probe(proxy.url, '--resumes', '10', '--timeout', '1000');
    expect(code).toBe(1);
    // Both replicas answered resumes.
    expect(new Set(proxy.routed)).toEqual(new Set([a.port, b.port]));
    expect(report.conditions.repeated_resumes.status).toBe('fail');
    expect(report.resumes.outcomes.forked).toBeGreaterThan(0);
    expect(report.resumes.outcomes.resumed).toBeGreaterThan(0);
    // Strict alternation, and the pings' order swapped for every other pair of resumes: 4 of the 10 reach the
    // replica that did not serve their ping.
    expect(report.resumes.forkedRatio).toBe(0.4);
    expect(report.conditions.replay.status).toBe('fail'); // the first resume went to the other replica
    expect(report.resumes.statusCodes).toEqual({ '200': 10 });
    const forks = report.resumes.details.filter(d => d.outcome === 'forked');
    for (const fork of forks) expect(['no_frame', 'eof_without_frames']).toContain(fork.reason);
    expect(report.resumes.firstEventIds['(no frame)']).toBe(4);
    // Resumes that went both ways: another replica's log, and the remedy is affinity or a shared store.
    expect(report.conditions.repeated_resumes.cause).toBe('other_replica');
    expect(report.conditions.replay.cause).toBe('other_replica');
    expect(report.conditions.repeated_resumes.fix).toMatch(/sticky routing on the `Mcp-Session-Id` header/);
  });

  // Issue 51: this split brain took 25 s at default settings with --notify-tool (28.7 s in the report).
  test('the same dead half at default settings, --notify-tool too: decided within 15 s, the silent resumes waiting together', async () => {
    const a = await fixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']);
    const b = await fixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']);
    const proxy = await startRoundRobinProxy([a.port, b.port]);
    proxies.push(proxy);
    let stdout = '';
    const started = Date.now();
    const code = await runProbeCli([proxy.url, '--json', '--notify-tool', 'notify'], {
      stdout: text => (stdout += text),
      stderr: () => undefined,
      env: {},
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    const report = JSON.parse(stdout) as ProbeReport;
    expect(code).toBe(1);
    expect(report.resumes.attempts).toBe(10);
    expect(report.resumes.forkedRatio).toBe(0.4);
    // Pipelined: each resume opened before the previous one had its verdict (requests overlapped at the proxy).
    // The SDK ends a replica's silent stream when the next resume for it arrives, so every silent resume but the
    // last one to each replica ends early; at most the last two wait out the whole --timeout, not all five in turn.
    expect(proxy.maxOpen()).toBeGreaterThanOrEqual(2);
    const forks = report.resumes.details.filter(d => d.outcome === 'forked');
    expect(forks).toHaveLength(4);
    expect(forks.filter(d => d.reason === 'no_frame').length).toBeLessThanOrEqual(2);
    // SDK-shaped ids, but the remedy is the deployment's: forks the SDK example store's id order does not explain,
    // and a standalone stream that replayed (so its store keys `_GET_stream_` events right) yet stops carrying them.
    expect(report.conditions.replay.cause).toBe('other_replica');
    expect(report.conditions.repeated_resumes.cause).toBe('other_replica');
    const standalone = report.streams.standalone.conditions;
    expect(standalone.replay.status).toBe('pass');
    expect(standalone.continues).toMatchObject({ status: 'fail', cause: 'no_affinity_stream' });
  });

  test('one event store shared by both replicas, no affinity: request streams resume, standalone notifications go astray', async () => {
    const store = await fixture('store-server.mjs');
    const storeUrl = `http://127.0.0.1:${store.port}`;
    const a = await fixture('sdk-server.mjs', ['--store', 'shared', '--store-url', storeUrl, '--hydrate']);
    const b = await fixture('sdk-server.mjs', ['--store', 'shared', '--store-url', storeUrl, '--hydrate']);
    const proxy = await startRoundRobinProxy([a.port, b.port]);
    proxies.push(proxy);
    const { code, report } = await probe(proxy.url, '--resumes', '6');
    expect(new Set(proxy.routed)).toEqual(new Set([a.port, b.port]));
    // No false alarm where the shared store does its job: request streams and the standalone replay.
    expect(report.streams.request.verdict).toBe('resumable');
    expect(report.resumes.outcomes.resumed).toBe(6);
    const standalone = report.streams.standalone;
    expect(standalone.conditions.replay.status).toBe('pass');
    expect(standalone.conditions.repeated_resumes.status).toBe('pass');
    // A notification made on the replica that does not hold the GET stream is stored, never written to it.
    expect(standalone.conditions.continues.status).toBe('fail');
    expect(standalone.conditions.continues.detail).toMatch(/never arrived on the resumed stream/);
    expect(code).toBe(1);
  });

  test('sticky replicas (affinity on Mcp-Session-Id) with one shared store: RESUMABLE on every stream kind', async () => {
    const store = await fixture('store-server.mjs');
    const storeUrl = `http://127.0.0.1:${store.port}`;
    const a = await fixture('sdk-server.mjs', ['--store', 'shared', '--store-url', storeUrl]);
    const b = await fixture('sdk-server.mjs', ['--store', 'shared', '--store-url', storeUrl]);
    const proxy = await startRoundRobinProxy([a.port, b.port], { sticky: true });
    proxies.push(proxy);
    // Two probes: two sessions, one on each replica.
    for (let run = 0; run < 2; run++) {
      const { code, report } = await probe(proxy.url, '--resumes', '4');
      expect(report.streams.request.verdict).toBe('resumable');
      expect(report.streams.standalone.verdict).toBe('resumable');
      expect(code).toBe(0);
    }
    expect(new Set(proxy.routed)).toEqual(new Set([a.port, b.port]));
  });

  test('per-process logs with validating stores: the other replica refuses (400) instead of forking', async () => {
    const a = await fixture('sdk-server.mjs', ['--store', 'validating', '--hydrate']);
    const b = await fixture('sdk-server.mjs', ['--store', 'validating', '--hydrate']);
    const proxy = await startRoundRobinProxy([a.port, b.port]);
    proxies.push(proxy);
    const { code, report } = await probe(proxy.url, '--resumes', '4');
    expect(code).toBe(1);
    expect(report.resumes.outcomes).toMatchObject({ resumed: 2, rejected: 2, forked: 0 });
    expect(report.resumes.forkedRatio).toBe(0);
    expect(report.resumes.statusCodes).toEqual({ '200': 2, '400': 2 });
    expect(report.conditions.repeated_resumes.detail).toMatch(/2 refused/);
    expect(report.conditions.repeated_resumes.cause).toBe('other_replica_refuses');
  });
});

describe('protocol versions and transports', () => {
  test('a 2026-07-28-only server (v2 createMcpHandler, legacy: reject) is not applicable, exit 2', async () => {
    const server = await fixture('modern-server.mjs', ['--legacy', 'reject']);
    const { code, report } = await probe(server.url);
    expect(code).toBe(2);
    expect(report.verdict).toBe('not_applicable');
    expect(report.protocol.serverSupported).toEqual(['2026-07-28']);
    for (const c of Object.values(report.conditions)) expect(c.status).toBe('not_applicable');
  });

  test('a stateless 2025 server (v2 createMcpHandler default): SSE without ids, not resumable', async () => {
    const server = await fixture('modern-server.mjs', ['--legacy', 'stateless']);
    const { code, report } = await probe(server.url);
    expect(code).toBe(1);
    expect(report.session.id).toBeNull();
    expect(report.notes.join('\n')).toMatch(/without sessions/);
    expect(report.conditions.event_ids.status).toBe('fail');
    // Resumption is a GET, and this server answers every GET with 405: refused, which is fine.
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'pass', evidence: { status: 405 } });
  });

  test('asking for 2025-06-18: no priming event, so no cursor precedes the response', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'validating']);
    const { code, report } = await probe(server.url, '--protocol-version', '2025-06-18');
    expect(report.protocol.negotiated).toBe('2025-06-18');
    // Ids on responses are all an older client gets; the stream has nothing before the response to resume from.
    expect(report.conditions.event_ids.status).toBe('pass');
    expect(report.conditions.replay.status).toBe('not_tested');
    expect(report.conditions.bogus_cursor_refused.status).toBe('pass');
    expect(code).toBe(2);
  });

  test('a server without SSE (JSON responses, GET 405) is not applicable', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'validating', '--json-response', '--no-get']);
    const { code, report } = await probe(server.url);
    expect(code).toBe(2);
    expect(report.verdict).toBe('not_applicable');
    expect(report.conditions.event_ids.detail).toMatch(/no SSE/);
  });
});

describe('authentication and timeouts', () => {
  let server: FixtureServer;
  beforeAll(async () => {
    server = await fixture('sdk-server.mjs', ['--token', 's3cret', '--require-header', 'X-Tenant: blue']);
  });

  test('without credentials the probe cannot test (401), exit 2', async () => {
    const { code, report } = await probe(server.url);
    expect(code).toBe(2);
    expect(report.verdict).toBe('untestable');
    expect(report.summary).toMatch(/401/);
  });

  test('--bearer and -H reach every request', async () => {
    const { code, report } = await probe(server.url, '--bearer', 's3cret', '-H', 'X-Tenant: blue', '--resumes', '2');
    expect(report.steps.every(s => s.status !== 401)).toBe(true);
    expect(code).toBe(0);
  });

  test('the token can come from FORKWATCH_PROBE_TOKEN', async () => {
    let stdout = '';
    const code = await runProbeCli([server.url, '--json', '-H', 'X-Tenant: blue', '--resumes', '1'], {
      stdout: text => (stdout += text),
      stderr: () => undefined,
      env: { FORKWATCH_PROBE_TOKEN: 's3cret' },
    });
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as ProbeReport).verdict).toBe('resumable');
  });

  test('a server that never answers is bounded by --timeout, exit 2', async () => {
    const hanging: Server = createServer(() => undefined);
    await new Promise<void>(resolve => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = hanging.address() as { port: number };
      const started = Date.now();
      const { code, report } = await probe(`http://127.0.0.1:${port}/mcp`, '--timeout', '300');
      expect(Date.now() - started).toBeLessThan(3000);
      expect(code).toBe(2);
      expect(report.summary).toMatch(/no response within 300 ms/);
    } finally {
      hanging.closeAllConnections();
      await new Promise(resolve => hanging.close(resolve));
    }
  });

  test('a wrong path or a server that is not MCP: one line with the status and content type, said once', async () => {
    const page = `<!doctype html><html><body>${'<p>Not Found</p>'.repeat(200)}</body></html>`;
    const web: Server = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end(page));
    await new Promise<void>(resolve => web.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = web.address() as { port: number };
      let stdout = '';
      const code = await runProbeCli([`http://127.0.0.1:${port}/wrong`], {
        stdout: text => (stdout += text),
        stderr: () => undefined,
        env: {},
      });
      expect(code).toBe(2);
      expect(stdout).not.toContain('<');
      // A status, not digits of the port in the URL line (a port such as 40412 holds "404").
      const lines = stdout.split('\n').filter(l => /\b404\b/.test(l));
      expect(lines).toHaveLength(1);
      // The content type is the server's text: quoted.
      expect(lines[0]).toMatch(
        /UNTESTED\s+every condition\s+initialize answered 404 \("text\/html"\), no JSON-RPC response/,
      );
      expect(stdout).toContain('verdict: COULD NOT TEST (exit 2)');
    } finally {
      web.closeAllConnections();
      await new Promise(resolve => web.close(resolve));
    }
  });

  test('a refused connection: exit 2', async () => {
    const stopped = await startFixture('sdk-server.mjs');
    await stopped.stop();
    const { code, report } = await probe(stopped.url);
    expect(code).toBe(2);
    expect(report.summary).toMatch(/ECONNREFUSED/);
  });
});
