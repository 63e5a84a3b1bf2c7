/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What a newcomer's walk-through of the drill found (issue 51), each pinned on a plain HTTP upstream: the head of an
 * SSE answer reaches the client at once (an empty resumed stream used to wait for the upstream's first keep-alive);
 * every resume is recorded with its cursor and status, the client's retry after the fault too, and it starts the
 * settle wait again; and the report says what was counted as proven loss or exposure, why nothing was cut when
 * nothing was, and that the client's URL is gone once the drill stops.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import type { SideReport } from '../../src/cli/drill/metrics';
import { type DrillOptions, parseDrillArgs } from '../../src/cli/drill/options';
import { type DrillProxy, startDrillProxy } from '../../src/cli/drill/proxy';
import { type DrillReport, countedSeries, drillReport, renderDrillReport } from '../../src/cli/drill/render';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function upstream(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise(resolve => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

interface Events {
  lines: string[];
  faulted: number;
  retried: number;
}

async function drill(args: string[]): Promise<{ proxy: DrillProxy; events: Events; options: DrillOptions }> {
  const options = parseDrillArgs(args) as DrillOptions;
  const events: Events = { lines: [], faulted: 0, retried: 0 };
  const proxy = await startDrillProxy(options, {
    log: line => events.lines.push(line),
    resumeFaulted: () => events.faulted++,
    resumeRetried: () => events.retried++,
  });
  closers.push(() => proxy.close());
  return { proxy, events, options };
}

const sse = { accept: 'text/event-stream', 'mcp-session-id': 'session-1' };

test("an SSE answer's head reaches the client at once, before the upstream writes a byte of its body", async () => {
  // An empty resumed stream, as the SDK answers a cursor its store does not know: 200, then only a keep-alive
  // comment every 15 s. Node's server holds a head back until the first body byte unless it is flushed.
  const up = await upstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  });
  const { proxy } = await drill(['--upstream', up]);
  const started = Date.now();
  const res = await fetch(`${proxy.url}/mcp`, {
    headers: { ...sse, 'last-event-id': '7' },
    signal: AbortSignal.timeout(5000),
  });
  expect(res.status).toBe(200);
  expect(Date.now() - started).toBeLessThan(2000);
  await res.body?.cancel();
});

describe('resumes of a cut stream', () => {
  /** Five frames on the standalone GET stream; a resume is refused (404) the first time and served empty after. */
  async function sessionServer(): Promise<{ url: string; resumes: string[] }> {
    const resumes: string[] = [];
    const url = await upstream((req, res) => {
      const cursor = req.headers['last-event-id'];
      if (typeof cursor === 'string') {
        resumes.push(cursor);
        if (resumes.length === 1) return void res.writeHead(404).end('unknown session');
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = setInterval(() => {
        if (res.destroyed || n === 5) return void clearInterval(tick);
        n++;
        res.write(`id: ${n}\ndata: {"n":${n}}\n\n`);
      }, 30);
    });
    return { url, resumes };
  }

  async function readUntilCut(url: string): Promise<void> {
    const res = await fetch(url, { headers: sse });
    try {
      for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>);
    } catch {
      // The cut: the connection drops mid-frame.
    }
  }

  test('the faulted resume and the retry are each recorded with cursor and status; the retry restarts the settle', async () => {
    const server = await sessionServer();
    const { proxy, events } = await drill(['--upstream', server.url, '--resume', 'pass']);
    await readUntilCut(`${proxy.url}/mcp`);
    const first = await fetch(`${proxy.url}/mcp`, { headers: { ...sse, 'last-event-id': '3' } });
    expect(first.status).toBe(404);
    await first.text();
    const retry = await fetch(`${proxy.url}/mcp`, { headers: { ...sse, 'last-event-id': '3' } });
    expect(retry.status).toBe(200);
    await retry.body?.cancel();
    expect(server.resumes).toEqual(['3', '3']);
    expect(events.faulted).toBe(1);
    expect(events.retried).toBe(1);
    const resumes = proxy.state.records.filter(r => r.kind === 'resume');
    expect(resumes).toEqual([
      expect.objectContaining({ lastEventId: '3', to: 'upstream', status: 404, fault: 'passed' }),
      expect.objectContaining({ lastEventId: '3', to: 'upstream', status: 200, fault: undefined }),
    ]);
    expect(events.lines.filter(l => /^(resume|answer) /.test(l))).toEqual([
      expect.stringMatching(/^resume {2}GET Last-Event-ID 3 \(session \w{8}\) → passed to --upstream$/),
      expect.stringMatching(/^answer {2}404 from --upstream to GET Last-Event-ID 3/),
      expect.stringMatching(/→ passed to --upstream \(a retry: the fault was done\)$/),
      expect.stringMatching(/^answer {2}200 from --upstream/),
    ]);
  });

  test('a resume of a session the drill never cut is recorded, and is no retry', async () => {
    const server = await sessionServer();
    const { proxy, events } = await drill(['--upstream', server.url]);
    const res = await fetch(`${proxy.url}/mcp`, { headers: { ...sse, 'last-event-id': '9' } });
    expect(res.status).toBe(404);
    expect(proxy.state.records).toEqual([
      expect.objectContaining({ kind: 'resume', lastEventId: '9', status: 404, fault: undefined }),
    ]);
    expect(events.retried).toBe(0);
    expect(events.lines).toEqual([]);
  });
});

describe('the report', () => {
  const side = (s: 'client' | 'server', url: string, changes: [string, number | undefined, number][]): SideReport => ({
    side: s,
    url,
    changes: changes.map(([series, before, after]) => ({ series, before, after })),
  });
  const scope = 'otel_scope_name="forkwatch",otel_scope_version="0.1.0"';
  const sides = [
    side('client', 'http://127.0.0.1:9464/metrics', [
      [`forkwatch_client_forks_total{transport="streamable_http",reason="id_regressed",${scope}}`, 0, 1],
      [`forkwatch_client_resumes_total{transport="streamable_http",outcome="forked",${scope}}`, 0, 1],
      [`forkwatch_client_resumes_total{transport="streamable_http",outcome="resumed",${scope}}`, 0, 2],
      [`forkwatch_client_resumes_total{transport="streamable_http",outcome="inconclusive",${scope}}`, undefined, 1],
    ]),
    side('server', 'http://127.0.0.1:9465/metrics', [
      [`forkwatch_server_resumes_total{transport="streamable_http",outcome="unknown_cursor",${scope}}`, 0, 1],
      [`forkwatch_server_resumes_total{transport="streamable_http",outcome="replayed",${scope}}`, 0, 1],
      [`forkwatch_server_events_total{transport="streamable_http",${scope}}`, 0, 27],
    ]),
  ];

  test('what moved is sorted into proven loss and exposure by the evidence table; continuity is in neither', () => {
    const counted = countedSeries(sides);
    expect(counted.provenLoss.map(c => `${c.side} ${c.series.split('{')[0]} ${c.increase}`)).toEqual([
      'client forkwatch_client_forks_total 1',
      'client forkwatch_client_resumes_total 1',
    ]);
    expect(counted.exposure.map(c => /(outcome|reason)="(\w+)"/.exec(c.series)?.[2])).toEqual([
      'inconclusive',
      'unknown_cursor',
    ]);
  });

  const report = (options: string[], streams: DrillReport['streams'], cuts: number, s = sides): DrillReport =>
    drillReport(
      parseDrillArgs(['--upstream', 'http://127.0.0.1:3000/mcp', ...options]) as DrillOptions,
      'http://127.0.0.1:40123/mcp',
      { records: streams, recordsLeftOut: 0, requests: 9, cuts, resumesFaulted: cuts },
      s,
      '1 resumes',
    );
  const stream = (kind: 'get' | 'post', framesSent: number): DrillReport['streams'][number] => ({
    n: 1,
    kind,
    method: kind === 'get' ? 'GET' : 'POST',
    session: 'abcdef0123',
    lastEventId: undefined,
    to: 'upstream',
    status: 200,
    fault: undefined,
    framesSent,
    framesArrived: framesSent,
    firstIds: [],
    lastIds: [],
    idsArrived: 0,
    ended: 'ended',
  });

  test('the text: series without the labels every series carries, the verdict, and the client URL that is gone', () => {
    const text = renderDrillReport(report([], [stream('get', 4)], 1));
    expect(text).toContain('  forkwatch_client_forks_total{reason="id_regressed"}  0 → 1\n');
    expect(text).toContain('  forkwatch_server_events_total  0 → 27\n');
    expect(text).not.toContain('otel_scope');
    expect(text).toMatch(
      /proven loss \(a fork: events lost, it pages\):\n {2}client \(http:\/\/127\.0\.0\.1:9464\/metrics\): forkwatch_client_forks_total\{reason="id_regressed"\} \+1\n/,
    );
    expect(text).toMatch(
      /exposure .*:\n.*outcome="inconclusive".*\n {2}server .*forkwatch_server_resumes_total\{outcome="unknown_cursor"\} \+1\n/,
    );
    expect(text).toMatch(/your client's requests to http:\/\/127\.0\.0\.1:40123\/mcp fail from now on/);
    expect(text).not.toContain('nothing was cut');
    const quiet = renderDrillReport(report([], [stream('get', 4)], 1, [side('client', 'http://c/metrics', [])]));
    expect(quiet).toContain('what forkwatch counted on your app:\n  no loss and no exposure\n');
  });

  test('nothing cut: it says which streams carried the events, and names --streams post when they were POSTs', () => {
    const postOnly = renderDrillReport(report([], [stream('get', 0), stream('post', 5)], 0));
    expect(postOnly).toContain('nothing was cut: no GET stream carried 3 events through the drill');
    expect(postOnly).toMatch(
      /POST response streams \(up to 5 events each; GET streams 0\): run the drill with --streams post/,
    );
    const quiet = renderDrillReport(report(['--streams', 'post'], [stream('post', 2)], 0));
    expect(quiet).toContain('nothing was cut: no POST stream carried 3 events');
    expect(quiet).toContain('lower --cut-after');
    expect(quiet).not.toContain('run the drill with --streams post');
  });
});
