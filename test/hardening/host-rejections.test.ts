/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The host's own unhandled rejections stay the host's: a promise an instrumented call hands back, left un-awaited,
 * raises `unhandledRejection` (and by default ends the process) with forkwatch as without it. Each case runs bare and
 * instrumented in separate processes (fixtures/host-rejections-app.cjs) and the two must report the same.
 *
 * Before shared/observed-promise.ts the wrappers attached `.then(onOk, onError)` to the promise they returned, which
 * marked it handled: the instrumented `send` reported no unhandled rejection and the process lived on.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const ROOT = join(__dirname, '../..');
const FIXTURE = join(__dirname, 'fixtures/host-rejections-app.cjs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', chunk => (stdout += chunk));
    child.stderr.on('data', chunk => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', code => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

interface Report {
  patched: boolean;
  unhandled: { message: string; isTheHostsPromise: boolean }[];
  handledLater: number;
}

const report = (r: Run): Report => JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');

/** Whether forkwatch wraps `globalThis.fetch` on this line (Node 22: its undici publishes no body chunks). */
const WRAPS_FETCH = Number(process.versions.node.split('.')[0]) < 24;

describe.each([
  { caseName: 'send', what: "an un-awaited SDK client transport's send() that rejects", patched: true },
  { caseName: 'fetch', what: 'an un-awaited fetch() of a session GET that rejects', patched: WRAPS_FETCH },
])('$what', ({ caseName, patched }) => {
  test('raises unhandledRejection, on the promise the host got, with forkwatch as without it', async () => {
    const [bare, instrumented] = await Promise.all([
      run([caseName, 'bare', 'listen']),
      run([caseName, 'instrumented', 'listen']),
    ]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(instrumented.code, instrumented.stderr).toBe(0);
    const [b, i] = [report(bare), report(instrumented)];
    expect(b.patched).toBe(false);
    // The case exercises forkwatch's wrapper where it wraps (fetch is wrapped on Node 22 only).
    expect(i.patched).toBe(patched);
    expect(b.unhandled).toHaveLength(1);
    expect(b.unhandled[0]?.isTheHostsPromise).toBe(true);
    expect({ ...i, patched: false }).toEqual(b);
  }, 60_000);

  test('ends the process by default (--unhandled-rejections=throw) with forkwatch as without it', async () => {
    const [bare, instrumented] = await Promise.all([
      run([caseName, 'bare', 'crash']),
      run([caseName, 'instrumented', 'crash']),
    ]);
    expect(bare.code).toBe(1);
    expect(bare.stdout).toBe('');
    expect(instrumented.code).toBe(1);
    expect(instrumented.stdout).toBe('');
    const firstLine = (text: string) => text.split('\n').find(line => /Error|TypeError/.test(line));
    expect(firstLine(instrumented.stderr)).toBe(firstLine(bare.stderr));
  }, 60_000);
});
