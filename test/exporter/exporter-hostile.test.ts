/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The built `forkwatch exporter` under hostile load (issue 53): abandoned scrapes, log injection, secrets in
 * rejected configs and requests, slowloris and silent connections, the fuzz of the issue and concurrent scrapers
 * with its memory after them. A shorter run of bench/listeners.mjs (its figures: docs/probe.md); register's
 * `/metrics`: test/hardening/listeners-metrics.test.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MB, settlesWithin, slowClientsClosed } from '../hardening/listener-support';
import { builtCli } from '../probe/fixtures/built-cli';
// @ts-expect-error: plain ESM module without types
import { abandonedScrapes, get, oversizedRequests, rssOf, scrapers, sleep } from '../../bench/listeners/attacks.mjs';

/** The SDK 1.32.2 server fixture register's tests run too, here without forkwatch: the healthy target. */
const FIXTURES = join(__dirname, '../register/fixtures');

describe('forkwatch exporter', () => {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-listeners-'));
  const children: ChildProcess[] = [];
  let hang: ReturnType<typeof createServer>;
  let healthyUrl: string;
  let hangUrl: string;
  let base: string;
  let port: number;
  let exporter: ChildProcess;
  let stderr = '';

  const waitForStderr = async (child: ChildProcess, read: () => string, pattern: RegExp) => {
    const end = Date.now() + 20_000;
    for (;;) {
      const m = pattern.exec(read());
      if (m) return m;
      if (Date.now() > end || child.exitCode !== null) throw new Error(`no ${pattern} in:\n${read()}`);
      await sleep(50);
    }
  };

  const run = (config: string, text: string) =>
    new Promise<{ code: number | null; output: string }>(resolve => {
      const path = join(dir, config);
      writeFileSync(path, text);
      const child = spawn(process.execPath, [builtCli(), 'exporter', '--config', path, '--listen', '127.0.0.1:0'], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH },
      });
      children.push(child);
      let output = '';
      child.stdout!.on('data', c => (output += String(c)));
      child.stderr!.on('data', c => (output += String(c)));
      child.on('close', code => resolve({ code, output }));
    });

  beforeAll(async () => {
    // A target that accepts and never answers, and a real SDK 1.32.2 server for the healthy scrape.
    hang = createServer(() => undefined);
    await new Promise<void>(resolve => hang.listen(0, '127.0.0.1', resolve));
    const mcp = spawn(process.execPath, [join(FIXTURES, 'http-server-app.cjs')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(mcp);
    let mcpErr = '';
    mcp.stderr!.on('data', c => (mcpErr += String(c)));
    const mcpPort = (await waitForStderr(mcp, () => mcpErr, /FIXTURE SERVER (\d+)/))[1];
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({ modules: { default: { timeoutMs: 2000, resumes: 2 } }, concurrency: 4, queue: 16 }),
    );
    exporter = spawn(process.execPath, [builtCli(), 'exporter', '--config', config, '--listen', '127.0.0.1:0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH },
    });
    children.push(exporter);
    exporter.stderr!.on('data', c => (stderr += String(c)));
    port = Number((await waitForStderr(exporter, () => stderr, /listening on http:\/\/127\.0\.0\.1:(\d+)/))[1]);
    base = `http://127.0.0.1:${port}`;
    const probe = (target: string) => `${base}/probe?module=default&target=${encodeURIComponent(target)}`;
    healthyUrl = probe(`http://127.0.0.1:${mcpPort}/mcp`);
    hangUrl = probe(`http://127.0.0.1:${(hang.address() as { port: number }).port}/mcp`);
  });

  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    hang.closeAllConnections();
    hang.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const gauge = async (name: string) => {
    const own = await (await fetch(`${base}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(own)![1]);
  };

  test('20 abandoned scrapes free their slots within 1 s, and the next healthy scrape gets 200', async () => {
    await abandonedScrapes(hangUrl, 20, 300);
    const left = Date.now();
    let busy = Number.POSITIVE_INFINITY;
    while (Date.now() - left < 1000) {
      busy = (await gauge('forkwatch_exporter_probes_in_flight')) + (await gauge('forkwatch_exporter_probes_queued'));
      if (busy === 0) break;
      await sleep(50);
    }
    expect(busy).toBe(0);
    expect(Date.now() - left).toBeLessThan(1000);
    expect(await gauge('forkwatch_exporter_probes_abandoned_total')).toBe(20);
    const next = await get(healthyUrl);
    expect(next.status).toBe(200);
  });

  test('a CR/LF in target= or module= writes no line of its own; every line quotes what came from the request', async () => {
    const forged = 'forkwatch exporter: probe http://forged/mcp module=default verdict=resumable 1 ms';
    for (const query of [
      `target=${encodeURIComponent(`nonsense\r\n${forged}`)}`,
      `target=${encodeURIComponent(`http://127.0.0.1:1/mcp\r\n${forged}`)}&module=${encodeURIComponent(`x\r\n${forged}`)}`,
      `target=${encodeURIComponent(`http://u:p\u2028${forged}@h/`)}`,
    ])
      expect([400, 200]).toContain((await get(`${base}/probe?${query}`)).status);
    await sleep(200);
    const lines = stderr.split('\n');
    expect(lines.filter(line => line.startsWith(forged))).toEqual([]);
    // Each request's 400 is one line, the value quoted with its CR, LF and U+2028 escaped.
    const quotedLines = lines.filter(line => line.includes('forged'));
    expect(quotedLines).toHaveLength(3);
    for (const line of quotedLines) expect(line).toMatch(/^forkwatch exporter: 400 [^"]*"/);
    expect(stderr).toMatch(/400 target is not a URL: "nonsense\\r\\nforkwatch exporter: probe/);
    expect(stderr).toMatch(/400 unknown module "x\\r\\nforkwatch exporter: probe/);
    expect(stderr).toMatch(/"http:\/\/u:p\\u2028forkwatch exporter: probe/);
    expect(stderr).not.toMatch(/[\u2028\u2029]/);
  });

  test('a secret in a rejected target or config appears in no output', async () => {
    const cases = [
      { modules: { a: { targets: ['https://mcp.example.com/mcp?token=SECRET-QUERY'] } } },
      { modules: { a: { targets: ['http://user:SECRET-USERINFO@mcp.example.com'] } } },
      { modules: { a: { targets: ['https://*.example.com/x*y#SECRET-FRAGMENT'] } } },
    ];
    for (const config of cases) {
      const { code, output } = await run('rejected.json', JSON.stringify(config));
      expect(code).toBe(64);
      expect(output).toMatch(/^forkwatch exporter: modules\.a\.targets\[0\]: /);
      expect(output).not.toMatch(/SECRET/);
    }
    // JSON.parse's own message quotes the text around the error.
    const broken = await run('broken.json', '{"modules": {"a": {"bearer": {"value": "SECRET-JSON" ]}}}');
    expect(broken.code).toBe(64);
    expect(broken.output).toMatch(/is not JSON \(line 1, column \d+\)/);
    expect(broken.output).not.toMatch(/SECRET/);
    // A request's target with credentials the URL parser rejects: the 400 and its log line leave them out.
    const res = await fetch(`${base}/probe?target=${encodeURIComponent('http://u:SECRET-REQUEST@[oops/mcp')}`);
    expect(res.status).toBe(400);
    expect(await res.text()).not.toMatch(/SECRET/);
    await sleep(100);
    expect(stderr).not.toMatch(/SECRET/);
  });

  test('slowloris and silent connections are closed within the header timeout', async () => {
    await slowClientsClosed(port, `${base}/-/healthy`);
  });

  test('fuzz and 200 concurrent scrapers, after a first round: memory comes back within 20 MB, and a healthy scrape still gets 200', async () => {
    const pid = exporter.pid!;
    // One round first: what a first burst adds for good (compiled code, the heap grown to its working size) is not a
    // leak; what the next burst adds and keeps is.
    await oversizedRequests(port, '/probe', 10);
    await scrapers(`${base}/metrics`, 200, 2_000);
    const before = rssOf(pid);
    const fuzz = await oversizedRequests(port, '/probe', 10);
    // 431, or the connection reset while the rest of a 1 MB line was still being sent.
    expect(Object.keys(fuzz).filter(status => status !== '431' && status !== '0')).toEqual([]);
    const statuses = await scrapers(`${base}/metrics`, 200, 4_000);
    expect(Object.keys(statuses)).toEqual(['200']);
    const after = await settlesWithin(() => rssOf(pid), before, 20 * MB);
    expect((after - before) / MB).toBeLessThan(20);
    expect((await get(healthyUrl)).status).toBe(200);
  });
});
