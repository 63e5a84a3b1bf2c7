/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * How long `forkwatch probe` takes with its default settings (--timeout 5000, --resumes 10) on every deployment
 * kind its tests know, running the built binary (`npm run build` first):
 *
 *   npx tsx bench/probe-timing.ts [--runs 3]
 *
 * Prints one line per deployment: verdict, exit code, the wall time of each run and the report's durationMs (ms;
 * the difference is Node.js starting the CLI). `--only <text>` picks deployments by name; `--cli <main.js>` runs
 * another build (an older commit's) to compare. Not a test: the numbers
 * depend on the machine; the tests check the structure (the silent resumes overlap) instead.
 */
import { execFile } from 'node:child_process';
import { type Server, createServer } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type RoundRobinProxy, startRoundRobinProxy } from '../test/probe/fixtures/round-robin-proxy';
import type { ProbeReport } from '../src/cli/probe/report';
import { type FixtureServer, startFixture } from '../test/probe/fixtures/servers';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    only: { type: 'string', default: '' },
    cli: { type: 'string', default: join(__dirname, '..', 'build', 'src', 'cli', 'main.js') },
  },
});
const CLI = values.cli;
const runs = Number(values.runs);

const servers: FixtureServer[] = [];
const proxies: RoundRobinProxy[] = [];
const others: Server[] = [];

async function one(file: string, ...args: string[]): Promise<FixtureServer> {
  const server = await startFixture(file, args);
  servers.push(server);
  return server;
}

async function two(...args: string[]): Promise<string> {
  const [a, b] = await Promise.all([
    one('sdk-server.mjs', ...args, '--hydrate'),
    one('sdk-server.mjs', ...args, '--hydrate'),
  ]);
  const proxy = await startRoundRobinProxy([a.port, b.port]);
  proxies.push(proxy);
  return proxy.url;
}

/** Two replicas behind a proxy with affinity on Mcp-Session-Id (no --hydrate: each holds its own sessions). */
async function twoSticky(...args: string[]): Promise<string> {
  const [a, b] = await Promise.all([one('sdk-server.mjs', ...args), one('sdk-server.mjs', ...args)]);
  const proxy = await startRoundRobinProxy([a.port, b.port], { sticky: true });
  proxies.push(proxy);
  return proxy.url;
}

async function hanging(): Promise<string> {
  const server = createServer(() => undefined);
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  others.push(server);
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`;
}

function probe(
  url: string,
  extra: string[],
): Promise<{ ms: number; code: number; verdict: string; report?: ProbeReport }> {
  const started = performance.now();
  return new Promise(resolve => {
    execFile(process.execPath, [CLI, 'probe', url, '--json', ...extra], { maxBuffer: 16 << 20 }, (error, stdout) => {
      const ms = Math.round(performance.now() - started);
      let report: ProbeReport | undefined;
      try {
        report = JSON.parse(stdout) as ProbeReport;
      } catch {
        // no report
      }
      resolve({ ms, code: typeof error?.code === 'number' ? error.code : 0, verdict: report?.verdict ?? '?', report });
    });
  });
}

const NOTIFY = ['--notify-tool', 'notify'];

/** Name, the endpoint, and the probe's arguments beyond the defaults. */
const DEPLOYMENTS: Array<[string, () => Promise<string>, string[]?]> = [
  ['one process, validating store', async () => (await one('sdk-server.mjs', '--store', 'validating')).url],
  [
    'one process, validating store, --notify-tool',
    async () => (await one('sdk-server.mjs', '--store', 'validating')).url,
    NOTIFY,
  ],
  [
    'one process, validating store, nothing ever sent on the GET stream',
    async () => (await one('sdk-server.mjs', '--store', 'validating', '--notify', 'none')).url,
  ],
  [
    'one process, SDK-shaped ids, a notify tool whose notifications carry a counter',
    async () => (await one('sdk-server.mjs', '--store', 'sdk-ids', '--notify', 'counter')).url,
    NOTIFY,
  ],
  [
    'one process, forgiving store (silent 200 to an unknown cursor)',
    async () => (await one('sdk-server.mjs', '--store', 'forgiving')).url,
  ],
  ['one process, the SDK example store', async () => (await one('sdk-server.mjs', '--store', 'sdk-example')).url],
  [
    'one process, the SDK example store with getStreamIdForEventId',
    async () => (await one('sdk-server.mjs', '--store', 'sdk-example-lookup')).url,
  ],
  [
    'one process, SDK example store, same millisecond (every resume silent)',
    async () => (await one('sdk-server.mjs', '--store', 'sdk-example', '--same-millisecond')).url,
  ],
  ['one process, no event store', async () => (await one('sdk-server.mjs', '--store', 'none')).url],
  ['two replicas, per-process logs, 200 then silence (dead half)', () => two('--store', 'forgiving')],
  [
    'two replicas, per-process logs, 200 then silence (dead half), --notify-tool',
    () => two('--store', 'forgiving'),
    NOTIFY,
  ],
  ['two replicas, per-process validating stores (400)', () => two('--store', 'validating')],
  [
    'two replicas, one shared store',
    async () => {
      const store = await one('store-server.mjs');
      return two('--store', 'shared', '--store-url', `http://127.0.0.1:${store.port}`);
    },
  ],
  [
    'two replicas, one shared store, sticky on Mcp-Session-Id',
    async () => {
      const store = await one('store-server.mjs');
      return twoSticky('--store', 'shared', '--store-url', `http://127.0.0.1:${store.port}`);
    },
  ],
  ['2026-07-28-only server', async () => (await one('modern-server.mjs', '--legacy', 'reject')).url],
  ['stateless 2025 server', async () => (await one('modern-server.mjs', '--legacy', 'stateless')).url],
  [
    'JSON responses, GET 405',
    async () => (await one('sdk-server.mjs', '--store', 'validating', '--json-response', '--no-get')).url,
  ],
  ['a server that never answers', hanging],
  ['connection refused', async () => 'http://127.0.0.1:9/mcp'],
];

async function main(): Promise<void> {
  process.stdout.write(`forkwatch probe, default settings, ${runs} runs each (ms)\n`);
  for (const [name, start, extra = []] of DEPLOYMENTS) {
    if (!name.includes(values.only)) continue;
    const url = await start();
    const results = [];
    for (let i = 0; i < runs; i++) results.push(await probe(url, extra));
    const last = results.at(-1)!;
    const wall = results.map(r => r.ms).join(', ');
    const probeOnly = results.map(r => r.report?.durationMs ?? '?').join(', ');
    process.stdout.write(`${name}: ${last.verdict}, exit ${last.code}; wall ${wall}; probe itself ${probeOnly}\n`);
    if (process.env.PROBE_TIMING_STEPS) process.stdout.write(`${JSON.stringify(last.report?.steps)}\n`);
  }
}

main()
  .finally(async () => {
    await Promise.all(proxies.map(p => p.close()));
    await Promise.all(servers.map(s => s.stop()));
    for (const server of others) server.close();
  })
  .catch(error => {
    process.stderr.write(`${String(error)}\n`);
    process.exitCode = 1;
  });
