// The test command of the README: build, run the vitest suites, check and unit-test the Prometheus rules with
// promtool, then print one closing line `tests: N passed, M failed`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });

let passed = 0;
let failed = 0;

// App folders that pin older SDK versions for the version tests: installed on first use.
const versionsDir = join(root, 'test/sdk-versions');
for (const dir of existsSync(versionsDir) ? readdirSync(versionsDir) : []) {
  const app = join(versionsDir, dir);
  if (existsSync(join(app, 'package-lock.json')) && !existsSync(join(app, 'node_modules'))) {
    run('npm', ['ci', '--no-audit', '--no-fund', '--prefix', app]);
  }
}

if (run(process.execPath, ['scripts/build.mjs']).status !== 0) {
  console.log('tests: 0 passed, 1 failed');
  process.exit(1);
}

// vitest: forwards extra arguments (e.g. a file filter) and reads the counts from its JSON report.
const report = join(root, 'build/vitest-report.json');
const vitest = run(process.execPath, [
  'node_modules/vitest/vitest.mjs',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...process.argv.slice(2),
]);
if (existsSync(report)) {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed += json.numPassedTests ?? 0;
  failed += json.numFailedTests ?? 0;
  // A file that fails to load has no failed test of its own: count it once.
  failed += (json.testResults ?? []).filter(f => f.status === 'failed' && !f.assertionResults?.some(a => a.status === 'failed')).length;
}
if (vitest.status !== 0 && failed === 0) failed++;

// promtool: rule syntax and the unit tests beside the rules.
const alertsDir = join(root, 'alerts');
const ruleFiles = existsSync(alertsDir) ? readdirSync(alertsDir).filter(f => /\.rules\.ya?ml$/.test(f)) : [];
const testsDir = join(alertsDir, 'tests');
const ruleTests = existsSync(testsDir) ? readdirSync(testsDir).filter(f => /\.ya?ml$/.test(f)) : [];
if (ruleFiles.length > 0 && process.argv.length <= 2) {
  const which = spawnSync('promtool', ['--version'], { stdio: 'ignore' });
  if (which.error) {
    console.error('promtool not found: install Debian package `prometheus` (CI does, see .ci/run)');
    failed++;
  } else {
    const check = run('promtool', ['check', 'rules', ...ruleFiles.map(f => join('alerts', f))]);
    check.status === 0 ? passed++ : failed++;
    for (const t of ruleTests) {
      const res = run('promtool', ['test', 'rules', join('alerts/tests', t)]);
      res.status === 0 ? passed++ : failed++;
    }
  }
}

console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
