/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The built `forkwatch exporter` as a process, as Prometheus's side of the network sees it (issue 38): no request
 * may end it or get a 5xx for being malformed (raw sockets, since fetch normalises paths), and the ways it cannot
 * start are one line each with a documented exit code.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CANNOT_LISTEN } from '../../src/cli/exporter/cli';
import { builtCli } from '../probe/fixtures/built-cli';
import { leasePort, waitUntil } from '../support/prometheus';
import { rawStatus } from './raw-http';

const dir = mkdtempSync(join(tmpdir(), 'forkwatch-exporter-cli-'));
const children: ChildProcess[] = [];

function configFile(name: string, config: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [builtCli(), 'exporter', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH },
    });
    let stderr = '';
    child.stderr!.on('data', c => (stderr += String(c)));
    child.on('close', code => resolve({ code, stderr }));
  });
}

afterAll(() => {
  for (const child of children) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('forkwatch exporter survives any request', () => {
  let exporter: ChildProcess;
  let port: number;
  let stderr = '';

  beforeAll(async () => {
    port = await leasePort();
    const config = configFile('fuzz.json', {
      modules: {
        // Port 1 refuses at once: a target that passes every check costs a refused connection, no more.
        default: { timeoutMs: 500, resumes: 1, targets: ['http://127.0.0.1:1'] },
        secret: { timeoutMs: 500, resumes: 1, targets: ['http://127.0.0.1:1/mcp'], bearer: { env: 'FUZZ_TOKEN' } },
      },
    });
    exporter = spawn(process.execPath, [builtCli(), 'exporter', '--config', config, '--listen', `127.0.0.1:${port}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH, FUZZ_TOKEN: 'fuzz-token' },
    });
    children.push(exporter);
    exporter.stderr!.on('data', c => (stderr += String(c)));
    await waitUntil(() => stderr.includes('listening on'), { timeoutMs: 15_000, what: `exporter start: ${stderr}` });
  });

  const alive = async () => {
    expect(exporter.exitCode, stderr).toBe(null);
    expect(await rawStatus(port, 'GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toBe(200);
  };
  const get = (target: string, headers = '') =>
    `GET ${target} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`;

  test('the requests from the issue and their kin: 4xx, and the process keeps answering', async () => {
    const cases: Array<[string, number]> = [
      [get('//'), 404],
      [get('//probe?module=default&target=http://127.0.0.1:1/mcp'), 404],
      [get('//['), 404],
      [get('/probe?module=__proto__&target=http://127.0.0.1:1/mcp'), 400],
      [get('/probe?module=constructor&target=http://127.0.0.1:1/mcp'), 400],
      [get('/probe?module=toString&target=http://127.0.0.1:1/mcp'), 400],
      [get('/probe?module=hasOwnProperty&target=http://127.0.0.1:1/mcp'), 400],
      [get('/probe?module=%zz&target=%zz'), 400],
      [get('/probe?target=http://a%zz:b@127.0.0.1:1/mcp'), 400],
      [get('/probe?target=http://[::1'), 400],
      [get('/probe?module=secret&target=http://127.0.0.1:2/mcp'), 403],
      [get('/probe?module=secret&target=http://127.0.0.1:1/other'), 403],
      [get('http://exporter/probe?module=default'), 400],
      [get('*'), 400],
      [
        get('/probe?module=default&target=http://127.0.0.1:1/mcp', 'X-Prometheus-Scrape-Timeout-Seconds: 1e999\r\n'),
        200,
      ],
      [get('/probe?module=default&target=http://127.0.0.1:1/mcp', 'X-Prometheus-Scrape-Timeout-Seconds: -1\r\n'), 200],
      [get(`/${'a'.repeat(20_000)}`), 431],
      ['GET / HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\nConnection: close\r\n\r\n', 400],
      ['BREW /probe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400],
      ['POST /probe HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}', 405],
    ];
    for (const [request, status] of cases)
      expect(await rawStatus(port, request), JSON.stringify(request.slice(0, 80))).toBe(status);
    await alive();
  });

  test('fuzz: paths, query strings and headers from raw bytes never end the process or get a 5xx', async () => {
    const unit = fc.constantFrom(
      '/',
      '%',
      'zz',
      '25',
      '?',
      '&',
      '=',
      '#',
      '.',
      '..',
      '[',
      ']',
      '@',
      ':',
      'a',
      '\u00ff',
      '*',
      '+',
    );
    const piece = fc.string({ unit, maxLength: 12 });
    const module = fc.oneof(
      fc.constantFrom('default', 'secret', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', ''),
      piece,
    );
    const target = fc.oneof(
      fc.constantFrom('http://127.0.0.1:1/mcp', 'http://127.0.0.1:2/mcp', 'file:///etc/passwd', 'http://u:p@h/', ''),
      piece.map(p => `http://127.0.0.1:1/${p}`),
      piece,
    );
    const pair = fc.tuple(fc.constantFrom('module', 'target', 'x', '', '%zz'), fc.oneof(module, target));
    const path = fc.oneof(
      fc.constantFrom('/probe', '/metrics', '/', '//', '/-/healthy'),
      piece.map(p => `/${p}`),
      piece,
    );
    const query = fc.array(pair, { maxLength: 4 }).map(ps => ps.map(([k, v]) => `${k}=${v}`).join('&'));
    const headerValue = fc.oneof(
      fc.constantFrom('1', '0', '-3', 'NaN', '1e999', '0x10', ''),
      fc.string({ unit: fc.constantFrom('a', '\t', ' ', '\u0000', '\u007f', '\u00ff', ':', '9'), maxLength: 8 }),
    );
    const header = fc.tuple(
      fc.constantFrom(
        'X-Prometheus-Scrape-Timeout-Seconds',
        'Authorization',
        'Cookie',
        'X-Forwarded-For',
        'Bad Name',
        '%',
      ),
      headerValue,
    );
    const method = fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'OPTIONS', 'get');
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(method, path, query, fc.array(header, { maxLength: 3 }), async (m, p, q, hs) => {
        const headers = hs.map(([name, value]) => `${name}: ${value}\r\n`).join('');
        const request = `${m} ${p}${q === '' ? '' : `?${q}`} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`;
        const status = await rawStatus(port, request);
        expect(status, JSON.stringify(request)).toBeGreaterThanOrEqual(200);
        expect(status, JSON.stringify(request)).toBeLessThan(500);
        answered++;
      }),
      { numRuns: 400 },
    );
    expect(answered).toBe(400);
    await alive();
    // The token stayed where it belongs: never in the exporter's own answers or log.
    expect(stderr).not.toContain('fuzz-token');
  });
});

describe('forkwatch exporter cannot start: one line, a documented exit code', () => {
  const valid = () => configFile('valid.json', { modules: { default: {} } });

  test('a busy port: exit 69, one line naming the address, no stack trace', async () => {
    const busy = createServer();
    const port = await leasePort();
    await new Promise<void>(resolve => busy.listen(port, '127.0.0.1', resolve));
    try {
      const { code, stderr } = await run(['--config', valid(), '--listen', `127.0.0.1:${port}`]);
      expect(code).toBe(CANNOT_LISTEN);
      expect(CANNOT_LISTEN).toBe(69);
      expect(stderr).toBe(
        `forkwatch exporter: cannot listen on 127.0.0.1:${port}: the address is already in use (EADDRINUSE)\n`,
      );
    } finally {
      busy.close();
    }
  });

  test('an address not on this host: exit 69, one line', async () => {
    const { code, stderr } = await run(['--config', valid(), '--listen', '192.0.2.1:9']);
    expect(code).toBe(69);
    expect(stderr).toMatch(/^forkwatch exporter: cannot listen on 192\.0\.2\.1:9: [^\n]+\n$/);
  });

  test('a literal Authorization header in the config: exit 64, one line naming the field', async () => {
    const config = configFile('literal.json', {
      modules: { default: { targets: ['https://h'], headers: { Authorization: { value: 'Bearer abc' } } } },
    });
    const { code, stderr } = await run(['--config', config]);
    expect(code).toBe(64);
    expect(stderr).toMatch(/^forkwatch exporter: modules\.default\.headers\.Authorization: a secret is never written/);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).not.toContain('abc');
  });
});
