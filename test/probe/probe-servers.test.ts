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
    expect(report.resumes.firstEventIds).toEqual({ [report.cursor.expectedEventId!]: 5 });
  });

  test("the SDK's example InMemoryEventStore: answers an unknown cursor with a silent 200", async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'sdk-example']);
    const { code, report } = await probe(server.url, '--resumes', '3');
    expect(code).toBe(1);
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'fail', evidence: { status: 200 } });
    expect(report.conditions.bogus_cursor_refused.detail).toMatch(/silent stream/);
    // The bogus cursor imitates the SDK's `<uuid>_<ms>_<rand>` shape.
    expect(report.cursor.bogus).toMatch(/^[0-9a-f-]{36}_[0-9]{13}_[0-9a-z]{8}$/);
    // The store replays in id order; when the priming event and the response share a millisecond, their random
    // suffixes decide, and the response can sort before its cursor and never be replayed (the next test forces it).
    const replayable = report.cursor.real!.localeCompare(report.cursor.expectedEventId!) < 0;
    expect(report.conditions.replay.status).toBe(replayable ? 'pass' : 'fail');
    expect(report.resumes.outcomes[replayable ? 'resumed' : 'forked']).toBe(3);
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
  });

  test('no event store: no ids, and Last-Event-ID is ignored (200 with a fresh stream)', async () => {
    const server = await fixture('sdk-server.mjs', ['--store', 'none']);
    const { code, report } = await probe(server.url);
    expect(code).toBe(1);
    expect(report.conditions.event_ids.status).toBe('fail');
    expect(report.conditions.replay.status).toBe('not_tested');
    expect(report.conditions.bogus_cursor_refused).toMatchObject({ status: 'fail', evidence: { status: 200 } });
    expect(report.verdict).toBe('not_resumable');
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
    // Strict alternation sends every other resume to the replica without the log.
    expect(report.resumes.forkedRatio).toBe(0.5);
    expect(report.conditions.replay.status).toBe('fail'); // the first resume went to the other replica
    expect(report.resumes.statusCodes).toEqual({ '200': 10 });
    const forks = report.resumes.details.filter(d => d.outcome === 'forked');
    for (const fork of forks) expect(['no_frame', 'eof_without_frames']).toContain(fork.reason);
    expect(report.resumes.firstEventIds['(no frame)']).toBe(5);
  });

  test('the same dead half with the default --timeout: the silent resumes wait together, not one after another', async () => {
    const a = await fixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']);
    const b = await fixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']);
    const proxy = await startRoundRobinProxy([a.port, b.port]);
    proxies.push(proxy);
    let stdout = '';
    const code = await runProbeCli([proxy.url, '--json'], {
      stdout: text => (stdout += text),
      stderr: () => undefined,
      env: {},
    });
    const report = JSON.parse(stdout) as ProbeReport;
    expect(code).toBe(1);
    expect(report.resumes.attempts).toBe(10);
    expect(report.resumes.forkedRatio).toBe(0.5);
    // Pipelined: each resume opened before the previous one had its verdict (requests overlapped at the proxy).
    // The SDK ends a replica's silent stream when the next resume for it arrives, so every silent resume but the
    // last one to each replica ends early; at most the last two wait out the whole --timeout, not all five in turn.
    expect(proxy.maxOpen()).toBeGreaterThanOrEqual(2);
    const forks = report.resumes.details.filter(d => d.outcome === 'forked');
    expect(forks).toHaveLength(5);
    expect(forks.filter(d => d.reason === 'no_frame').length).toBeLessThanOrEqual(2);
  });

  test('one event store shared by both replicas: resumable behind the same proxy (no false alarm)', async () => {
    const store = await fixture('store-server.mjs');
    const storeUrl = `http://127.0.0.1:${store.port}`;
    const a = await fixture('sdk-server.mjs', ['--store', 'shared', '--store-url', storeUrl, '--hydrate']);
    const b = await fixture('sdk-server.mjs', ['--store', 'shared', '--store-url', storeUrl, '--hydrate']);
    const proxy = await startRoundRobinProxy([a.port, b.port]);
    proxies.push(proxy);
    const { code, report } = await probe(proxy.url, '--resumes', '6');
    expect(new Set(proxy.routed)).toEqual(new Set([a.port, b.port]));
    expect(report.verdict).toBe('resumable');
    expect(report.resumes.outcomes.resumed).toBe(6);
    expect(code).toBe(0);
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

  test('a refused connection: exit 2', async () => {
    const stopped = await startFixture('sdk-server.mjs');
    await stopped.stop();
    const { code, report } = await probe(stopped.url);
    expect(code).toBe(2);
    expect(report.summary).toMatch(/ECONNREFUSED/);
  });
});
