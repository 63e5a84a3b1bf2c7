/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The packed tarball in apps that run their own OpenTelemetry SDK, one per release line: 2.x (sdk-node 0.223, api
 * 1.9.0, the lowest API forkwatch's peer range allows) and 3.x (sdk-node 0.301, api 1.10.0), installed with a plain
 * `npm install` (no flags) after the app's own packages. `npm ls` proves one copy of each OpenTelemetry package
 * (forkwatch's dependency ranges take the app's own line, and a 3.x app gets no sdk-trace-base), and forkwatch's
 * metrics and spans reach the app's own SDK, both as a library (ForkwatchInstrumentation in the app's NodeSDK) and
 * with `--require forkwatch/register`; with no SDK of the app's, register starts one from the app's packages.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  FIXTURES,
  type Lab,
  packedForkwatch,
  leasePort,
  labEnv,
  sampleValue,
  scrapeText,
  startApp,
  startLab,
} from './support';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const LINES = {
  '2.x': ['@opentelemetry/api@1.9.0', '@opentelemetry/sdk-node@0.223.0', '@opentelemetry/exporter-prometheus@0.223.0'],
  '3.x': ['@opentelemetry/api@1.10.0', '@opentelemetry/sdk-node@0.301.2', '@opentelemetry/exporter-prometheus@0.301.2'],
} as const;
type Line = keyof typeof LINES;
const API_OF: Record<Line, string> = { '2.x': '1.9.0', '3.x': '1.10.0' };

let work: string;
let tarball: string;
let lab: Lab;
const apps = {} as Record<Line, string>;

async function npmInstall(cwd: string, specs: string[]): Promise<void> {
  const install = () =>
    run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs], {
      cwd,
      maxBuffer: 16 << 20,
      timeout: 240_000,
    });
  try {
    await install();
  } catch (error) {
    // The registry is a network service: one retry, with the first failure on record.
    process.stderr.write(
      `npm install failed once, retrying: ${String((error as { stderr?: string }).stderr ?? error)}\n`,
    );
    await install();
  }
}

/** Every installed copy of each @opentelemetry/* package: name -> versions (one entry per copy). */
async function otelCopies(cwd: string): Promise<Record<string, string[]>> {
  const { stdout } = await run(npm, ['ls', '--all', '--parseable', '--long'], { cwd, maxBuffer: 64 << 20 }).catch(
    (error: { stdout: string }) => ({ stdout: error.stdout }), // npm ls exits 1 on unmet optional peers
  );
  const copies: Record<string, string[]> = {};
  for (const line of new Set(stdout.split('\n'))) {
    const [, id] = line.split(':');
    const match = /^(@opentelemetry\/[^@]+)@(.+)$/.exec(id ?? '');
    if (match) {
      const name = match[1]!;
      copies[name] ??= [];
      copies[name].push(match[2]!);
    }
  }
  return copies;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'forkwatch-lines-'));
  tarball = (await packedForkwatch()).tarball;
  await Promise.all(
    (Object.keys(LINES) as Line[]).map(async line => {
      const dir = join(work, line);
      mkdirSync(dir);
      for (const file of ['client-app.cjs', 'client-app.mjs', 'own-sdk-any-line.cjs'])
        cpSync(join(FIXTURES, file), join(dir, file));
      writeFileSync(
        join(dir, 'package.json'),
        `${JSON.stringify({ name: `app-${line}`, version: '1.0.0', private: true })}\n`,
      );
      // The app's own SDK first, as it was before forkwatch came along; then forkwatch.
      await npmInstall(dir, [...LINES[line], '@modelcontextprotocol/sdk@1.32.2']);
      await npmInstall(dir, [tarball]);
      apps[line] = dir;
    }),
  );
  lab = await startLab();
}, 600_000);

afterAll(async () => {
  await lab?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.each(Object.keys(LINES) as Line[])('an app on the OpenTelemetry JS %s line', line => {
  test('one copy of @opentelemetry/api, the app own', async () => {
    const copies = await otelCopies(apps[line]);
    process.stderr.write(`${line}: ${JSON.stringify(copies)}\n`);
    expect(copies['@opentelemetry/api']).toEqual([API_OF[line]]);
  });

  test('one copy of every OpenTelemetry package: forkwatch uses the app own and adds none', async () => {
    const copies = await otelCopies(apps[line]);
    const duplicated = Object.entries(copies).filter(([, versions]) => versions.length > 1);
    expect(duplicated).toEqual([]);
    // The SDK packages forkwatch builds on are the app's own release line, not a newer one beside it.
    const major = line.slice(0, 1);
    for (const stable of ['core', 'sdk-metrics', 'resources', 'context-async-hooks'])
      expect(copies[`@opentelemetry/${stable}`]).toEqual([expect.stringMatching(new RegExp(`^${major}\\.`))]);
    expect(copies['@opentelemetry/instrumentation']).toEqual([line === '3.x' ? '0.301.2' : '0.223.0']);
    // 3.x has no sdk-trace-base: a copy would be forkwatch's own, of the older line.
    if (line === '3.x') expect(copies['@opentelemetry/sdk-trace-base']).toBeUndefined();
  });

  test.each([
    { flag: '--require', file: 'client-app.cjs' },
    { flag: '--import', file: 'client-app.mjs' },
  ])(
    'node $flag forkwatch/register $file, no SDK of the app: forkwatch starts one from the app packages',
    async ({ flag, file }) => {
      const port = await leasePort();
      const proc = startApp({
        cwd: apps[line],
        args: [flag, 'forkwatch/register', file],
        env: { ...(await labEnv(lab)), OTEL_EXPORTER_PROMETHEUS_PORT: String(port), OTEL_TRACES_EXPORTER: 'console' },
      });
      expect(await proc.done()).toMatchObject({ lost: 0, resumes: [200], patched: true });
      const text = await scrapeText(port);
      expect(
        sampleValue(text, 'forkwatch_client_resumes_total', { transport: 'streamable_http', outcome: 'resumed' }),
      ).toBe(1);
      // The resource the SDK detected on this line: the process detector ran.
      expect(text).toMatch(/target_info\{[^}]*process_pid="\d+"/);
      expect(await proc.stop('SIGTERM')).toEqual({ code: null, signal: 'SIGTERM' });
      expect(proc.stdout()).toBe('');
      // The console span exporter writes to stderr: a span of the resume reached it.
      expect(proc.stderr()).toMatch(/name: 'forkwatch\.client\.resume',/);
    },
  );

  test.each([
    {
      mode: 'library (ForkwatchInstrumentation in the app NodeSDK)',
      args: ['own-sdk-any-line.cjs'],
      env: { FIXTURE_OWN_FORKWATCH: '1' },
    },
    {
      mode: '--require forkwatch/register',
      args: ['--require', 'forkwatch/register', 'own-sdk-any-line.cjs'],
      env: {},
    },
  ])(
    '$mode: forkwatch metrics on the app Prometheus exporter, its spans in the app span processor',
    async ({ args, env }) => {
      const port = await leasePort();
      const proc = startApp({
        cwd: apps[line],
        args,
        env: { ...(await labEnv(lab)), APP_METRICS_PORT: String(port), ...env },
      });
      expect(await proc.done()).toMatchObject({ lost: 0, resumes: [200], patched: true });
      expect(proc.stderr()).toContain(`FIXTURE OTEL LINE ${line}`);
      const text = await scrapeText(port);
      expect(
        sampleValue(text, 'forkwatch_client_resumes_total', { transport: 'streamable_http', outcome: 'resumed' }),
      ).toBe(1);
      expect(proc.stderr()).toContain('FIXTURE SPAN forkwatch.client.resume');
      expect(proc.stdout()).toBe('');
      expect(proc.forkwatchLines()).toEqual([]);
      await proc.stop('SIGTERM');
    },
  );
});
