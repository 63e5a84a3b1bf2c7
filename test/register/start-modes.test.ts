/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Every way Node runs code, under `NODE_OPTIONS='--require forkwatch/register'` (the README's container install) and
 * `--import`: a script, `-e`, `-p`, stdin, the piped REPL, `--input-type=module`, a worker thread, a child process
 * inheriting NODE_OPTIONS, `node --test`. Each runs bare and instrumented in separate processes, and the two must
 * print the same bytes on stdout and on stderr and exit the same way. The runtime is the one vitest runs on
 * (scripts/runtimes.mjs runs test/register/ on every line: Node 22.15 takes the module.register loader thread, the
 * others the synchronous module.registerHooks path, see lifecycle/esm-loader.ts).
 *
 * Before lifecycle/esm-loader.ts's builtinFormatKept, `-e`, `-p`, the REPL and everything started from them died on
 * Node 22.23, 24 and 26 with ENOENT 'module' (import-in-the-middle's resolve hook answering `node:module` as CommonJS).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AppDir, cleanEnv, makeAppDir, syncLoaderHooks } from './support';

let app: AppDir;

beforeAll(() => {
  app = makeAppDir([]);
  writeFileSync(join(app.dir, 'script.cjs'), 'console.log(1);\n');
  writeFileSync(join(app.dir, 'script.mjs'), "import { EOL } from 'node:os';\nprocess.stdout.write(`1${EOL}`);\n");
  writeFileSync(
    join(app.dir, 'worker.mjs'),
    "import { parentPort } from 'node:worker_threads';\nparentPort.postMessage(2);\n",
  );
  writeFileSync(
    join(app.dir, 'one.test.cjs'),
    "const test = require('node:test');\ntest('one', () => { require('node:assert').strictEqual(1, 1); });\n",
  );
  writeFileSync(
    join(app.dir, 'two.test.mjs'),
    "import test from 'node:test';\nimport assert from 'node:assert';\ntest('two', () => assert.equal(2, 2));\n",
  );
}, 120_000);

afterAll(() => app?.remove());

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <args>` in the app folder with `stdin` piped in, NODE_OPTIONS as given. */
function run(args: string[], stdin: string | undefined, nodeOptions: string | undefined): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: app.dir,
      // No metrics exporter: a fixed default port (9464) shared by files running at once would add an EADDRINUSE
      // line that says nothing about the start mode.
      env: cleanEnv({ NODE_OPTIONS: nodeOptions, OTEL_METRICS_EXPORTER: 'none', NODE_DISABLE_COLORS: '1' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', chunk => (stdout += chunk));
    child.stderr.on('data', chunk => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(stdin ?? '');
  });
}

/** What differs run to run and not with forkwatch: `node --test`'s durations. */
function steady(text: string): string {
  return text.replace(/duration_ms:? [\d.]+/g, 'duration_ms N').replace(/\([\d.]+ms\)/g, '(N ms)');
}

const WORKER_EVAL = [
  '-e',
  "const { Worker } = require('node:worker_threads'); new Worker('require(\"node:worker_threads\").parentPort.postMessage(2)', { eval: true }).on('message', m => console.log(1, m));",
];
const WORKER_ESM = [
  '-e',
  "const { Worker } = require('node:worker_threads'); new Worker('./worker.mjs').on('message', m => console.log(1, m));",
];
const CHILD = [
  '-e',
  "require('node:child_process').execFileSync(process.execPath, ['-e', 'console.log(2)'], { stdio: 'inherit' }); require('node:child_process').execFileSync(process.execPath, ['-p', '3'], { stdio: 'inherit' }); console.log(1);",
];

/** Each start mode: its arguments, its stdin, and the exact stdout expected (undefined: as bare, whatever it is). */
const MODES: { name: string; args: string[]; stdin?: string; stdout?: string }[] = [
  { name: 'a CommonJS script', args: ['script.cjs'], stdout: '1\n' },
  { name: 'an ES module script', args: ['script.mjs'], stdout: '1\n' },
  { name: '-e', args: ['-e', 'console.log(1)'], stdout: '1\n' },
  { name: '-e requiring builtins', args: ['-e', "require('node:fs'); require('os'); console.log(1)"], stdout: '1\n' },
  { name: '-p', args: ['-p', '1'], stdout: '1\n' },
  { name: '-p reading a builtin', args: ['-p', "require('node:path').sep"], stdout: '/\n' },
  { name: 'stdin', args: [], stdin: 'console.log(1)\n', stdout: '1\n' },
  {
    name: 'stdin, -',
    args: ['-'],
    stdin: "console.log(require('os') === require('node:os') ? 1 : 0)\n",
    stdout: '1\n',
  },
  { name: 'the REPL, piped', args: ['-i'], stdin: "console.log(1)\nrequire('node:path').sep\n.exit\n" },
  {
    name: '--input-type=module -e',
    args: ['--input-type=module', '-e', "import os from 'node:os'; console.log(1)"],
    stdout: '1\n',
  },
  {
    name: '--input-type=module, stdin',
    args: ['--input-type=module'],
    stdin: "const { sep } = await import('node:path'); console.log(1)\n",
    stdout: '1\n',
  },
  { name: 'a worker thread (eval)', args: WORKER_EVAL, stdout: '1 2\n' },
  { name: 'a worker thread (ES module file)', args: WORKER_ESM, stdout: '1 2\n' },
  { name: 'child processes inheriting NODE_OPTIONS', args: CHILD, stdout: '2\n3\n1\n' },
  {
    name: 'node --test (CommonJS and ES module files)',
    args: ['--test', '--test-reporter=tap', 'one.test.cjs', 'two.test.mjs'],
  },
];

const SYNC = await syncLoaderHooks();

describe.each([
  { flag: '--require', options: '--require forkwatch/register' },
  { flag: '--import', options: '--import forkwatch/register' },
])(
  `NODE_OPTIONS=$flag forkwatch/register (${SYNC ? 'module.registerHooks' : 'module.register'} loader)`,
  ({ options }) => {
    test.each(MODES)(
      '$name: the same stdout, stderr and exit as bare',
      async ({ args, stdin, stdout }) => {
        const [bare, instrumented] = await Promise.all([run(args, stdin, undefined), run(args, stdin, options)]);
        expect(bare.code, `bare run failed: ${bare.stderr}`).toBe(0);
        if (stdout !== undefined) expect(bare.stdout).toBe(stdout);
        expect({ ...instrumented, stdout: steady(instrumented.stdout) }).toEqual({
          ...bare,
          stdout: steady(bare.stdout),
        });
      },
      90_000,
    );
  },
);

test("the README's container line: NODE_OPTIONS='--require forkwatch/register' node -e 'console.log(1)' prints 1 and nothing else", async () => {
  const result = await run(['-e', 'console.log(1)'], undefined, '--require forkwatch/register');
  expect(result).toEqual({ code: 0, signal: null, stdout: '1\n', stderr: '' });
}, 60_000);
