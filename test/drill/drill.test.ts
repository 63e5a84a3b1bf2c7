/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `forkwatch drill` in front of real servers, with a real client app through it, every process on port 0 reporting
 * its port: the SDK 1.32.2 client and servers, the resume rerouted to a second server process without the session's
 * log (the client's forkwatch counts the fork, the drill prints it beside the streams), and a healthy pass-through
 * resume that counts no fork.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { startServer } from '../../lab/harness.mjs';

const root = join(__dirname, '../..');
const cli = join(root, 'build/src/cli/main.js');
const children: ChildProcess[] = [];
const servers: { stop(): void }[] = [];

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGTERM');
  for (const server of servers.splice(0)) server.stop();
});

function waitForLine(
  stream: NodeJS.ReadableStream,
  pattern: RegExp,
  what: string,
  ms = 60_000,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${what}: no ${pattern} within ${ms} ms:\n${text}`)), ms);
    stream.on('data', chunk => {
      text += chunk;
      const m = pattern.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
  });
}

interface DrillJson {
  cuts: number;
  resumesFaulted: number;
  stoppedBy: string;
  counted: Record<'provenLoss' | 'exposure', { side: string; url: string; series: string; increase: number }[]>;
  streams: {
    kind: string;
    to: string;
    status: number;
    fault?: string;
    lastEventId?: string;
    framesSent: number;
    framesArrived: number;
    firstIds: string[];
    ended: string;
  }[];
  sides: { side: string; url: string; changes: { series: string; before?: number; after: number }[]; error?: string }[];
}

async function startClient() {
  const child = spawn(process.execPath, [join(__dirname, 'fixtures/sdk-client.cjs')], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  const port = Number((await waitForLine(child.stdout!, /CLIENT METRICS (\d+)/, 'client'))[1]);
  return { child, metrics: `http://127.0.0.1:${port}/metrics` };
}

async function runDrill(args: string[], client: ChildProcess): Promise<DrillJson> {
  const drill = spawn(process.execPath, [cli, 'drill', ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(drill);
  let out = '';
  drill.stdout!.on('data', chunk => {
    out += chunk;
  });
  let err = '';
  drill.stderr!.on('data', chunk => {
    err += chunk;
  });
  const url = (await waitForLine(drill.stderr!, /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/, 'drill'))[1]!;
  client.stdin!.write(`${url}\n`);
  const code = await new Promise<number | null>(resolve => drill.once('exit', resolve));
  expect(code, err).toBe(0);
  return JSON.parse(out) as DrillJson;
}

const moved = (report: DrillJson, side: string, series: RegExp) =>
  report.sides
    .filter(s => s.side === side)
    .flatMap(s => s.changes)
    .filter(c => series.test(c.series));

describe('forkwatch drill on the SDK 1.32.2 client and servers', () => {
  test('the resume rerouted to a process without the log: the client counts a fork, the drill shows it', async () => {
    const a = await startServer({ name: 'A', store: { idFormat: 'integer' } });
    servers.push(a);
    const b = await startServer({
      name: 'B',
      store: { idFormat: 'integer', unknownCursor: 'fresh' },
      hydrate: true,
      ticker: { everyMs: 150, count: 2 },
    });
    servers.push(b);
    const client = await startClient();
    const report = await runDrill(
      [
        '--upstream',
        `${a.url}/mcp`,
        '--reroute-upstream',
        `${b.url}/mcp`,
        '--client-metrics',
        client.metrics,
        '--server-metrics',
        `${a.url}/__lab/metrics`,
        '--server-metrics',
        `${b.url}/__lab/metrics`,
        '--stop-after',
        '1',
        '--settle-ms',
        '5000',
        '--duration',
        '90',
      ],
      client.child,
    );
    expect(report.stoppedBy).toBe('1 resumes');
    expect(report.cuts).toBe(1);
    const cut = report.streams.find(s => s.fault === 'cut')!;
    expect(cut).toMatchObject({ kind: 'get', to: 'upstream', status: 200, ended: 'cut' });
    expect(cut.framesArrived).toBeGreaterThanOrEqual(3);
    expect(cut.framesSent).toBeGreaterThanOrEqual(cut.framesArrived);
    const resume = report.streams.find(s => s.kind === 'resume')!;
    expect(resume).toMatchObject({ to: 'reroute', status: 200, fault: 'rerouted' });
    // The cursor is the last id the client got before the cut; B's fresh log starts again from 1.
    expect(resume.lastEventId).toBe(cut.firstIds.at(-1));
    expect(resume.firstIds[0]).toBe('1');
    expect(moved(report, 'client', /^forkwatch_client_forks_total\{.*reason="id_regressed"/)).toEqual([
      expect.objectContaining({ after: 1 }),
    ]);
    expect(moved(report, 'client', /^forkwatch_client_resumes_total\{.*outcome="forked"/)).toHaveLength(1);
    expect(report.counted.provenLoss.map(c => c.series)).toContainEqual(
      expect.stringMatching(/^forkwatch_client_forks_total\{.*reason="id_regressed"/),
    );
    // B saw the resume of a cursor it never stored (its store vouched for it: `replayed`, 0 events).
    const bSide = report.sides.find(s => s.url === `${b.url}/__lab/metrics`)!;
    expect(bSide.error).toBeUndefined();
    expect(bSide.changes.some(c => /^forkwatch_server_resumes_total\{/.test(c.series))).toBe(true);
  }, 180_000);

  test('a healthy resume passed back to the same process: no fork counted', async () => {
    const a = await startServer({ name: 'A', store: { idFormat: 'integer' } });
    servers.push(a);
    const client = await startClient();
    const report = await runDrill(
      [
        '--upstream',
        `${a.url}/mcp`,
        '--resume',
        'pass',
        '--client-metrics',
        client.metrics,
        '--server-metrics',
        `${a.url}/__lab/metrics`,
        '--stop-after',
        '1',
        '--settle-ms',
        '4000',
        '--duration',
        '90',
      ],
      client.child,
    );
    expect(report.cuts).toBe(1);
    const resume = report.streams.find(s => s.kind === 'resume')!;
    expect(resume).toMatchObject({ to: 'upstream', status: 200, fault: 'passed' });
    // The replay: the events sent while the client was away, after the cursor (the session-wide counter also
    // numbers the POST streams' events, so the standalone stream's next id may skip some).
    expect(Number(resume.firstIds[0])).toBeGreaterThan(Number(resume.lastEventId));
    expect(resume.framesArrived).toBeGreaterThanOrEqual(1);
    expect(moved(report, 'client', /^forkwatch_client_forks_total/)).toEqual([]);
    expect(moved(report, 'client', /^forkwatch_client_resumes_total\{.*outcome="resumed"/)).toHaveLength(1);
    expect(moved(report, 'server', /^forkwatch_server_resumes_total\{.*outcome="replayed"/)).toHaveLength(1);
    expect(report.counted).toEqual({ provenLoss: [], exposure: [] });
  }, 180_000);
});

describe("forkwatch drill on the SDK README's server: unknown sessions refused, the SDK's example event store", () => {
  test('the rerouted resume is refused, the retry on the process that holds the log is served empty: both counted', async () => {
    // The app a newcomer has (issue 51's walk-through): a second process answers an unknown session 404, and the
    // SDK's example InMemoryEventStore cannot resolve its own standalone-stream ids (SDK issues #943, #2560). Its
    // keep-alive is the SDK's 15 s, longer than the whole drill after the retry: the client learns that the retry
    // was answered 200 only because the drill sends the head of an SSE answer at once.
    const a = await startServer({ name: 'A', store: 'sdk-example' });
    servers.push(a);
    const b = await startServer({ name: 'B', store: 'sdk-example', hydrate: false });
    servers.push(b);
    const client = await startClient();
    const report = await runDrill(
      [
        '--upstream',
        `${a.url}/mcp`,
        '--reroute-upstream',
        `${b.url}/mcp`,
        '--client-metrics',
        client.metrics,
        '--server-metrics',
        `${a.url}/__lab/metrics`,
        '--server-metrics',
        `${b.url}/__lab/metrics`,
        '--stop-after',
        '1',
        '--settle-ms',
        '5000',
        '--duration',
        '90',
      ],
      client.child,
    );
    expect(report.cuts).toBe(1);
    const cut = report.streams.find(s => s.fault === 'cut')!;
    const resumes = report.streams.filter(s => s.kind === 'resume');
    // The faulted resume, refused by B; then the SDK's retry of the same cursor, passed to A and recorded as a
    // resume with its cursor (it was shown as a plain GET before).
    expect(resumes[0]).toMatchObject({
      to: 'reroute',
      status: 404,
      fault: 'rerouted',
      lastEventId: cut.firstIds.at(-1),
    });
    expect(resumes[1]).toMatchObject({ to: 'upstream', status: 200, lastEventId: cut.firstIds.at(-1) });
    expect(resumes[1]!.fault).toBeUndefined();
    expect(resumes[1]!.framesArrived).toBe(0);
    expect(moved(report, 'client', /^forkwatch_client_resumes_total\{.*outcome="rejected"/)).toEqual([
      expect.objectContaining({ after: 1 }),
    ]);
    // The retry's empty 200 reached the client at once, so its verdict timeout (3 s) ran out within the settle wait
    // the retry started again.
    expect(moved(report, 'client', /^forkwatch_client_resumes_total\{.*outcome="inconclusive"/)).toEqual([
      expect.objectContaining({ after: 1 }),
    ]);
    // Scraped before the drill let go of the client's streams: its own shutdown counts nothing.
    expect(moved(report, 'client', /^forkwatch_client_resumes_total\{.*outcome="failed"/)).toEqual([]);
    const aSide = report.sides.find(s => s.url === `${a.url}/__lab/metrics`)!;
    expect(
      aSide.changes.filter(c => /^forkwatch_server_resumes_total\{.*outcome="unknown_cursor"/.test(c.series)),
    ).toEqual([expect.objectContaining({ after: 1 })]);
    // The summary: all three are exposure, none is proven loss.
    expect(report.counted.provenLoss).toEqual([]);
    expect(report.counted.exposure.map(c => `${c.side} ${/outcome="(\w+)"/.exec(c.series)?.[1]}`).sort()).toEqual([
      'client inconclusive',
      'client rejected',
      'server unknown_cursor',
    ]);
  }, 180_000);
});

describe('forkwatch drill in front of another stack: @hono/mcp 0.3.2 (forkwatch/register, its metrics via prom-client)', () => {
  test('a resume passed back to the hono server: replayed there, no fork on the client', async () => {
    const appFolder = join(root, 'test/sdk-versions/hono-mcp');
    const hono = spawn(
      process.execPath,
      ['--import', join(root, 'build/src/register.js'), join(root, 'lab/stacks/hono-mcp-server.mjs')],
      {
        cwd: appFolder,
        env: {
          ...process.env,
          STACK_APP: appFolder,
          STACK_SERVER: JSON.stringify({ port: 0, eventStore: 'memory', metricsRoute: true }),
          OTEL_METRICS_EXPORTER: 'none',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    children.push(hono);
    const port = Number((await waitForLine(hono.stderr!, /STACK LISTENING (\d+)/, 'hono server', 120_000))[1]);
    const client = await startClient();
    const report = await runDrill(
      [
        '--upstream',
        `http://127.0.0.1:${port}/mcp`,
        '--client-metrics',
        client.metrics,
        '--server-metrics',
        `http://127.0.0.1:${port}/metrics`,
        '--stop-after',
        '1',
        '--settle-ms',
        '4000',
        '--duration',
        '90',
      ],
      client.child,
    );
    expect(report.cuts).toBe(1);
    const resume = report.streams.find(s => s.kind === 'resume')!;
    expect(resume).toMatchObject({ to: 'upstream', status: 200, fault: 'passed' });
    expect(resume.framesArrived).toBeGreaterThanOrEqual(1);
    const server = report.sides.find(s => s.side === 'server')!;
    expect(server.error).toBeUndefined();
    expect(moved(report, 'server', /^forkwatch_server_resumes_total\{.*outcome="replayed"/)).toEqual([
      expect.objectContaining({ after: 1 }),
    ]);
    expect(moved(report, 'client', /^forkwatch_client_forks_total/)).toEqual([]);
    expect(moved(report, 'client', /^forkwatch_client_resumes_total\{/).length).toBeGreaterThan(0);
  }, 240_000);
});
