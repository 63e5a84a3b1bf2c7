/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The test command of the README: provision what the tests need (scripts/provision.mjs), build, run the vitest
// suites on every Node.js line forkwatch claims (scripts/runtimes.mjs: the whole suite on Node 24, the
// runtime-sensitive suites on Node 22 and 26, the register suites on 22.15.0, the oldest allowed; each under the registry's own binary, first on PATH so that every
// child process a test starts runs it too; the Prometheus rules' promtool unit tests among them), type-check src/ and
// the tests, check the rules with promtool, then print one closing line `tests: N passed, M failed`. A skipped or todo test counts as failed:
// the suite has none on purpose.
//
// `npm test -- <vitest arguments>` (e.g. a file filter) runs only the vitest files they select, on Node 24 (or on the
// runtimes FORKWATCH_TEST_RUNTIMES names, e.g. `node22,node26`), and says so: the type-check, Biome and promtool steps run with
// the whole suite only.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { provision } from './provision.mjs';
import { RUNTIMES, runtimeBinary, suiteArguments } from './runtimes.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
const args = process.argv.slice(2);

let passed = 0;
let failed = 0;
const startedAt = Date.now();
const finish = () => {
  // The README's figure for `npm test` (about 25 minutes on 2 cores) is this line's, on a fresh clone.
  console.error(`test: ${((Date.now() - startedAt) / 60_000).toFixed(1)} minutes, provisioning included`);
  console.log(`tests: ${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
};

/**
 * Runs a check in the background with its output kept, printed once it ends; resolves with its exit status. The
 * type-check and Biome need only node_modules: they run while provisioning waits on the network, not after vitest.
 */
function background(cmd, cmdArgs) {
  return new Promise(resolve => {
    const child = spawn(cmd, cmdArgs, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', chunk => output.push(chunk));
    child.stderr.on('data', chunk => output.push(chunk));
    child.once('error', error => resolve({ status: null, output: String(error) }));
    child.once('close', status => resolve({ status, output: Buffer.concat(output).toString() }));
  });
}
const tsc = 'node_modules/typescript/bin/tsc';
const staticChecks =
  args.length === 0
    ? {
        typecheck: (async () => {
          const src = await background(process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit']);
          if (src.status !== 0) return src;
          return background(process.execPath, [tsc, '-p', 'test/tsconfig.json']);
        })(),
        biome: background(process.execPath, [
          'node_modules/@biomejs/biome/bin/biome',
          'check',
          // Warnings fail the suite too: the tree has none, and a new one is read where it is written.
          '--diagnostic-level=warn',
          '--error-on-warnings',
          '.',
        ]),
      }
    : undefined;

// The build needs only node_modules too: beside provisioning.
const build = background(process.execPath, ['scripts/build.mjs']);
const problems = await provision();
if (problems.length > 0) {
  for (const p of problems) console.error(`test: cannot run the suite: ${p}`);
  failed += problems.length;
  finish();
}

const built = await build;
process.stderr.write(built.output);
if (built.status !== 0) {
  console.error('test: the build failed');
  failed++;
  finish();
}
// The static checks end before vitest starts: no CPU taken from the timing of its tests (on a fresh machine they
// have long ended, within provisioning).
if (staticChecks) await Promise.all([staticChecks.typecheck, staticChecks.biome]);

// promtool: the rules' syntax once more after vitest, with the whole suite only. Their unit tests run in vitest
// (test/alerts/promtool.test.ts: every file under both rule-group evaluation orders, and the mutants), not here again.
const alertsDir = join(root, 'alerts');
const ruleFiles = existsSync(alertsDir) ? readdirSync(alertsDir).filter(f => /\.rules\.ya?ml$/.test(f)) : [];
if (args.length > 0) {
  console.error(
    `test: arguments given (${args.join(' ')}): only the vitest files they select run; ` +
      'the type-check, Biome and `promtool check rules` run with `npm test` alone',
  );
} else {
  console.error('test: vitest, then `promtool check rules`');
}

/** Runs vitest under one runtime; adds its counts. */
function runVitest(runtime, vitestArgs) {
  const bin = runtimeBinary(root, runtime);
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout?.trim();
  const what = vitestArgs.length > 0 ? vitestArgs.join(' ') : 'the whole suite';
  console.error(`test: Node.js ${version} (${runtime.pkg}): ${what}`);
  // The report is removed first: never last run's.
  const report = join(root, `build/vitest-report-${runtime.pkg}.json`);
  rmSync(report, { force: true });
  const env = { ...process.env, PATH: `${dirname(bin)}${delimiter}${process.env.PATH ?? ''}` };
  const vitest = run(
    bin,
    [
      'node_modules/vitest/vitest.mjs',
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
      `--maxWorkers=${runtime.workers}`,
      ...vitestArgs,
    ],
    { env },
  );
  let linePassed = 0;
  let lineFailed = 0;
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    linePassed += json.numPassedTests ?? 0;
    lineFailed += json.numFailedTests ?? 0;
    // A file that fails to load has no failed test of its own: count it once.
    lineFailed += (json.testResults ?? []).filter(
      f => f.status === 'failed' && !f.assertionResults?.some(a => a.status === 'failed'),
    ).length;
    // Skipped and todo tests: none may exist, so each one is reported and counted as failed.
    const skipped = (json.testResults ?? []).flatMap(f =>
      (f.assertionResults ?? [])
        .filter(a => ['skipped', 'pending', 'todo', 'disabled'].includes(a.status))
        .map(a => `${f.name.replace(`${root}/`, '')} > ${a.fullName ?? a.title} (${a.status})`),
    );
    for (const s of skipped) console.error(`test: SKIPPED on ${runtime.pkg} (counted as failed): ${s}`);
    lineFailed += skipped.length;
  } else {
    console.error(`test: vitest wrote no report on ${runtime.pkg}`);
  }
  if (vitest.status !== 0 && lineFailed === 0) lineFailed++;
  console.error(`test: Node.js ${version}: ${linePassed} passed, ${lineFailed} failed`);
  passed += linePassed;
  failed += lineFailed;
}

// vitest: each runtime's suites (scripts/runtimes.mjs); with arguments, those files on Node 24, or on the runtimes
// FORKWATCH_TEST_RUNTIMES names (`node22,node26`).
const chosen = process.env.FORKWATCH_TEST_RUNTIMES?.split(',').map(name => name.trim());
for (const name of chosen ?? []) {
  if (RUNTIMES.some(runtime => runtime.pkg === name)) continue;
  console.error(`test: FORKWATCH_TEST_RUNTIMES names ${name}, not one of ${RUNTIMES.map(r => r.pkg).join(', ')}`);
  failed++;
}
for (const runtime of RUNTIMES) {
  if (args.length > 0) {
    const wanted = chosen ? chosen.includes(runtime.pkg) : runtime.suites === 'all';
    if (wanted) runVitest(runtime, args);
  } else {
    runVitest(runtime, suiteArguments(runtime.suites));
  }
}

// The type-check of src/ and of the tests (`npm run typecheck`), with the whole suite only (run above, beside
// provisioning, reported here): vitest strips types without checking them, so only this keeps the tests' types honest in CI.
if (staticChecks) {
  const typecheck = await staticChecks.typecheck;
  process.stderr.write(typecheck.output);
  if (typecheck.status !== 0) console.error('test: the type-check failed: `npm run typecheck` shows where');
  typecheck.status === 0 ? passed++ : failed++;

  // Biome: one linter and formatter for the whole tree (biome.json), with the whole suite only.
  const lint = await staticChecks.biome;
  if (lint.status !== 0) {
    process.stderr.write(lint.output);
    console.error('test: biome check failed: `npm run format` fixes the formatting, the lint is fixed by hand');
  }
  lint.status === 0 ? passed++ : failed++;
}

if (args.length === 0 && ruleFiles.length > 0) {
  const check = run('promtool', ['check', 'rules', ...ruleFiles.map(f => join('alerts', f))]);
  if (check.error) console.error(`test: promtool: ${check.error.message} (install Debian's package prometheus)`);
  check.status === 0 ? passed++ : failed++;
}

finish();
