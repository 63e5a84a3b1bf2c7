/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * An stdio MCP server under forkwatch/register: stdout is the server's JSON-RPC stream, so register must never write
 * there. Driven once by the real SDK client (StdioClientTransport spawns it: the protocol works end to end), and once
 * by hand with every stdout byte kept (nothing but JSON-RPC messages, one per line).
 */
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AppDir, cleanEnv, leasePort, makeAppDir, parseMetricFamilies, scrapeText, waitUntil } from './support';

let app: AppDir;

beforeAll(() => {
  app = makeAppDir();
}, 120_000);

afterAll(() => app?.remove());

describe.each([
  { file: 'stdio-server.cjs', flag: '--require' },
  { file: 'stdio-server.mjs', flag: '--import' },
])('node $flag forkwatch/register $file', ({ file, flag }) => {
  test('the real StdioClientTransport lists and calls tools; register serves its metrics meanwhile', async () => {
    const port = await leasePort();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [flag, 'forkwatch/register', file],
      cwd: app.dir,
      env: cleanEnv({ OTEL_EXPORTER_PROMETHEUS_PORT: String(port) }) as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', chunk => (stderr += chunk));
    const errors: Error[] = [];
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    client.onerror = error => errors.push(error);
    await client.connect(transport);
    let closeExit: unknown;
    try {
      const { tools } = await client.listTools();
      expect(tools.map(t => t.name)).toEqual(['add']);
      const result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
      expect(result.content).toEqual([{ type: 'text', text: '5' }]);

      // forkwatch/register is live inside the server: its Prometheus endpoint answers with forkwatch's families.
      const families = parseMetricFamilies(await waitUntil(() => scrapeText(port), { what: `metrics on :${port}` }));
      expect(families.get('forkwatch_server_resumes_total')?.type).toBe('counter');
      expect(families.get('forkwatch_client_resumes_total')?.type).toBe('counter');
    } finally {
      // Closing stdin lets the server's event loop run dry: register flushes at beforeExit and the process exits by
      // itself (code 0), before the transport's 2 s grace period would escalate to SIGTERM (a signal exit).
      const child = (transport as unknown as { _process?: import('node:child_process').ChildProcess })._process;
      const exit = new Promise(resolve => child?.once('exit', (code, signal) => resolve({ code, signal })));
      const t0 = performance.now();
      await client.close();
      closeExit = child ? await exit : 'no child process';
      process.stderr.write(`stdio server ${file}: exited ${(performance.now() - t0) | 0} ms after stdin closed\n`);
    }
    expect(closeExit).toEqual({ code: 0, signal: null });
    // Any non-JSON-RPC byte on stdout would have reached the client's parser as an error.
    expect(errors).toEqual([]);
    expect(stderr.split('\n').filter(l => l.startsWith('forkwatch:'))).toEqual([]);
  });

  test('stdout carries nothing but JSON-RPC messages', async () => {
    const port = await leasePort();
    const child = spawn(process.execPath, [flag, 'forkwatch/register', file], {
      cwd: app.dir,
      env: cleanEnv({ OTEL_EXPORTER_PROMETHEUS_PORT: String(port), OTEL_LOG_LEVEL: 'debug' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', c => (stdout += c));
    child.stderr.on('data', c => (stderr += c));
    const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)));
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    const responseTo = (id: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no response ${id}; stdout:\n${stdout}\nstderr:\n${stderr}`)),
          15_000,
        );
        const check = () => {
          if (stdout.split('\n').some(l => l.includes(`"id":${id}`))) {
            clearTimeout(timer);
            child.stdout.off('data', check);
            resolve();
          }
        };
        child.stdout.on('data', check);
        check();
      });

    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    await responseTo(1);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    await responseTo(2);
    // Let register do everything it does after start-up (its SDK starts one tick in, the port opens): its metrics answer.
    await waitUntil(() => scrapeText(port), { what: `metrics on :${port}` });
    child.stdin.end();
    expect(await exited).toBe(0);

    // OTEL_LOG_LEVEL=debug made OpenTelemetry talk: all of it went to stderr.
    expect(stderr).toMatch(/forkwatch: opentelemetry debug:/);
    expect(stdout.endsWith('\n')).toBe(true);
    const lines = stdout.slice(0, -1).split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    expect(JSON.parse(lines[1]!).result.tools.map((t: { name: string }) => t.name)).toEqual(['add']);
  });
});
