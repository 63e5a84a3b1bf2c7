/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * register's `/metrics` under hostile load (issue 53), in a real SDK 1.32.2 server started with
 * `--require forkwatch/register` and a canary argument: the command line in no resource attribute, slowloris and
 * silent connections, concurrent scrapers and the host's memory after them, abandoned scrapes. A shorter run of
 * bench/listeners.mjs (its figures: docs/benchmark.md); the exporter's side: test/exporter/exporter-hostile.test.ts.
 */
import { join } from 'node:path';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { coalescedScrape } from '../../src/lifecycle/register-exporters';
import { COMMAND_LINE_ATTRIBUTES } from '../../src/lifecycle/register-sdk';
import { type AppDir, type AppProcess, FIXTURES, makeAppDir, startApp } from '../register/support';
// @ts-expect-error: plain ESM module without types
import { abandonedScrapes, get, rssOf, scrapers, sleep } from '../../bench/listeners/attacks.mjs';
import { MB, settlesWithin, slowClientsClosed } from './listener-support';

const CANARY = `canary-${process.pid}-issue-53`;

describe("register's /metrics in an SDK 1.32.2 server", () => {
  let app: AppDir;
  beforeAll(() => {
    app = makeAppDir();
  });
  afterAll(() => app.remove());

  const startServer = async (env: Record<string, string> = {}) => {
    const proc: AppProcess = startApp({
      cwd: app.dir,
      args: [
        '--require',
        join(FIXTURES, 'default-port-to-os.cjs'),
        '--require',
        'forkwatch/register',
        'http-server-app.cjs',
        `--api-token=${CANARY}`,
      ],
      env,
    });
    const listen = JSON.parse((await proc.waitForStderr(/FIXTURE LISTEN (.*)\n/))[1]!) as { port: number };
    await proc.waitForStderr(/FIXTURE SERVER (\d+)/);
    return { proc, port: listen.port, url: `http://127.0.0.1:${listen.port}/metrics` };
  };

  test('the command line is in no resource attribute unless asked for; the rest of target_info stays', async () => {
    const [plain, asked] = await Promise.all([startServer(), startServer({ FORKWATCH_RESOURCE_COMMAND_LINE: 'true' })]);
    const text = await (await fetch(plain.url)).text();
    expect(text).not.toContain(CANARY);
    expect(text).not.toMatch(/process_command/);
    const targetInfo = text.split('\n').find(line => line.startsWith('target_info{'));
    expect(targetInfo).toMatch(/process_runtime_name="nodejs"/);
    expect(targetInfo).toMatch(/process_pid="\d+"/);
    expect(targetInfo).toMatch(/host_name="/);
    expect(COMMAND_LINE_ATTRIBUTES).toContain('process.command_args');
    // FORKWATCH_RESOURCE_COMMAND_LINE=true: the user asked, the detector's attributes are kept as they were.
    const kept = await (await fetch(asked.url)).text();
    expect(kept).toContain(`--api-token=${CANARY}`);
    expect(kept).toMatch(/process_command_args="/);
    expect(plain.proc.forkwatchLines()).toEqual([]);
  });

  test('slowloris and silent connections are closed within the header timeout', async () => {
    const { port, url } = await startServer();
    await slowClientsClosed(port, url);
  });

  test('200 concurrent scrapers: all answered, the host’s RSS retains no gross growth; abandoned scrapes cost nothing', async () => {
    const { proc, url } = await startServer();
    for (let i = 0; i < 20; i++) expect((await get(url)).status).toBe(200);
    // A first burst of 200 connections grows the allocator's arenas once, bare or not (21.5 MB on Node 22 on a
    // loaded 2-core machine); the figure that says whether scrapes hold on to memory is the growth a second burst
    // adds on top of that. bench/listeners.mjs measures the first 30 s burst against idle (docs/benchmark.md).
    expect(Object.keys(await scrapers(url, 200, 3_000))).toEqual(['200']);
    await sleep(1000);
    const pid = proc.child.pid!;
    const before = rssOf(pid);
    const statuses = await scrapers(url, 200, 5_000);
    expect(Object.keys(statuses)).toEqual(['200']);
    expect(statuses[200]).toBeGreaterThan(200);
    // Issue 53 asks for 20 MB; this 5 s burst measured 21 to 61 MB of growth in CI runs (34 to 35 MB on an idle
    // machine after the warm-up burst), so 20 MB is not met reliably and the issue stays open. The bound here only
    // guards against gross retention (the host grew 197 MB and kept it); bench/listeners.mjs has the figure.
    const after = await settlesWithin(() => rssOf(pid), before, 20 * MB);
    expect((after - before) / MB).toBeLessThan(100);
    await abandonedScrapes(url, 20, 0);
    const next = Date.now();
    expect((await get(url, { timeoutMs: 1000 })).status).toBe(200);
    expect(Date.now() - next).toBeLessThan(1000);
  });

  test('scrapes that come while a collection runs share it and its body', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const provider = new MeterProvider({ readers: [exporter] });
    provider.getMeter('listeners').createCounter('listener_test_total').add(3);
    let collections = 0;
    const collect = exporter.collect.bind(exporter);
    exporter.collect = options => {
      collections++;
      return collect(options);
    };
    const scrape = coalescedScrape(exporter, () => Promise.resolve());
    const bodies = await Promise.all(Array.from({ length: 200 }, () => scrape()));
    expect(collections).toBe(1);
    expect(new Set(bodies).size).toBe(1);
    expect(bodies[0]!.toString()).toMatch(/^listener_test_total\{[^}]*\} 3$/m);
    await scrape();
    expect(collections).toBe(2);
    await provider.shutdown();
  });
});
