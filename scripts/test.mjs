/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The test command of the README: provision what the tests need (scripts/provision.mjs), build, run the vitest
// suites, type-check src/ and the tests, check and unit-test the Prometheus rules with promtool, then print one
// closing line `tests: N passed, M failed`. A skipped or todo test counts as failed: the suite has none on purpose.
//
// `npm test -- <vitest arguments>` (e.g. a file filter) runs only the vitest files they select, and says so: the
// type-check, Biome and promtool steps run with the whole suite only.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { provision } from './provision.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
const args = process.argv.slice(2);

let passed = 0;
let failed = 0;
const finish = () => {
  console.log(`tests: ${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
};

const problems = provision();
if (problems.length > 0) {
  for (const p of problems) console.error(`test: cannot run the suite: ${p}`);
  failed += problems.length;
  finish();
}

if (run(process.execPath, ['scripts/build.mjs']).status !== 0) {
  console.error('test: the build failed');
  failed++;
  finish();
}

// promtool: rule syntax and the unit tests beside the rules, with the whole suite only.
const alertsDir = join(root, 'alerts');
const ruleFiles = existsSync(alertsDir) ? readdirSync(alertsDir).filter(f => /\.rules\.ya?ml$/.test(f)) : [];
const testsDir = join(alertsDir, 'tests');
const ruleTests = existsSync(testsDir) ? readdirSync(testsDir).filter(f => /\.ya?ml$/.test(f)) : [];
const promtoolSteps = ruleFiles.length > 0 ? 1 + ruleTests.length : 0;
if (args.length > 0) {
  console.error(
    `test: arguments given (${args.join(' ')}): only the vitest files they select run; ` +
      `the ${promtoolSteps} promtool step(s) (promtool check rules, promtool test rules) run with \`npm test\` alone`,
  );
} else {
  console.error(`test: vitest, then ${promtoolSteps} promtool step(s)`);
}

// vitest: forwards the arguments and reads the counts from its JSON report (removed first: never last run's).
const report = join(root, 'build/vitest-report.json');
rmSync(report, { force: true });
const vitest = run(process.execPath, [
  'node_modules/vitest/vitest.mjs',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...args,
]);
if (existsSync(report)) {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed += json.numPassedTests ?? 0;
  failed += json.numFailedTests ?? 0;
  // A file that fails to load has no failed test of its own: count it once.
  failed += (json.testResults ?? []).filter(
    f => f.status === 'failed' && !f.assertionResults?.some(a => a.status === 'failed'),
  ).length;
  // Skipped and todo tests: none may exist, so each one is reported and counted as failed.
  const skipped = (json.testResults ?? []).flatMap(f =>
    (f.assertionResults ?? [])
      .filter(a => ['skipped', 'pending', 'todo', 'disabled'].includes(a.status))
      .map(a => `${f.name.replace(`${root}/`, '')} > ${a.fullName ?? a.title} (${a.status})`),
  );
  for (const s of skipped) console.error(`test: SKIPPED (counted as failed): ${s}`);
  failed += skipped.length;
} else {
  console.error('test: vitest wrote no report');
}
if (vitest.status !== 0 && failed === 0) failed++;

// The type-check of src/ and of the tests (`npm run typecheck`), with the whole suite only: vitest strips types
// without checking them, so only this keeps the tests' types honest in CI.
if (args.length === 0) {
  const tsc = 'node_modules/typescript/bin/tsc';
  const checks = [
    ['-p', 'tsconfig.json', '--noEmit'],
    ['-p', 'test/tsconfig.json'],
  ];
  const typecheck = checks.every(check => run(process.execPath, [tsc, ...check]).status === 0);
  if (!typecheck) console.error('test: the type-check failed: `npm run typecheck` shows where');
  typecheck ? passed++ : failed++;
}

// Biome: one linter and formatter for the whole tree (biome.json), with the whole suite only.
if (args.length === 0) {
  const lint = run(process.execPath, [
    'node_modules/@biomejs/biome/bin/biome',
    'check',
    '--diagnostic-level=error',
    '.',
  ]);
  if (lint.status !== 0) console.error('test: biome check failed: `npm run format` fixes the formatting');
  lint.status === 0 ? passed++ : failed++;
}

if (args.length === 0 && ruleFiles.length > 0) {
  const check = run('promtool', ['check', 'rules', ...ruleFiles.map(f => join('alerts', f))]);
  if (check.error) console.error(`test: promtool: ${check.error.message} (install Debian's package prometheus)`);
  check.status === 0 ? passed++ : failed++;
  for (const t of ruleTests) {
    const res = run('promtool', ['test', 'rules', join('alerts/tests', t)]);
    res.status === 0 ? passed++ : failed++;
  }
}

finish();
