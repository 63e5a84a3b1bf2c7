// What the tests need beyond `npm ci`, provisioned before they run (scripts/test.mjs calls it; `node
// scripts/provision.mjs` runs it alone):
// - Debian's prometheus, prometheus-alertmanager and jsonnet (prometheus, promtool, prometheus-alertmanager, amtool,
//   jsonnet), installed
//   with apt-get when missing and the user is root; otherwise a clear message and a failure, never a skip.
// - The app folders in test/sdk-versions/ that pin older MCP SDKs: `npm ci` in each whose install is missing or older
//   than its lockfile; a failed install fails here, loudly, instead of failing the version tests later.
// It starts nothing that keeps running and stops nothing: the tests start their own servers on ports from the OS.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The Debian binaries the tests run (test/support/prometheus.ts BIN), by the package that installs them. */
export const DEBIAN_BINARIES = {
  prometheus: ['/usr/bin/prometheus', '/usr/bin/promtool'],
  'prometheus-alertmanager': ['/usr/bin/prometheus-alertmanager', '/usr/bin/amtool'],
  // The pack's jsonnet mixin is compiled by the tests (test/alerts/mixin.test.ts).
  jsonnet: ['/usr/bin/jsonnet'],
};

const log = line => console.error(`provision: ${line}`);

/** Installs the Debian packages whose binaries are missing. Returns an error message, or undefined when all is there. */
export function provisionDebianPackages({
  run = spawnSync,
  binaries = DEBIAN_BINARIES,
  isRoot = process.getuid?.() === 0,
  hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0,
} = {}) {
  const missing = Object.entries(binaries).filter(([, bins]) => bins.some(bin => !existsSync(bin)));
  if (missing.length === 0) return undefined;
  const packages = missing.map(([pkg]) => pkg);
  const bins = missing.flatMap(([, b]) => b.filter(bin => !existsSync(bin)));
  const command = `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  if (!isRoot || !hasApt) {
    return (
      `${bins.join(', ')} missing; the rule, alert and dashboard tests need them. ` +
      (hasApt
        ? `Run as root: ${command}`
        : `Install Debian's packages ${packages.join(', ')} (apt-get is not available here)`)
    );
  }
  log(`${bins.join(', ')} missing: ${command}`);
  // --no-install-recommends leaves out prometheus-node-exporter; no service is stopped or started by this script.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = run('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  if (update.status !== 0)
    return `apt-get update failed (exit ${update.status ?? update.signal}); cannot install ${packages.join(', ')}`;
  const install = run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], {
    stdio: 'inherit',
    env,
  });
  if (install.status !== 0) return `${command} failed (exit ${install.status ?? install.signal})`;
  const still = bins.filter(bin => !existsSync(bin));
  if (still.length > 0) return `${command} succeeded but ${still.join(', ')} is still missing`;
  return undefined;
}

/** `npm ci` in every test/sdk-versions/ folder whose install is missing or older than its lockfile. */
export function provisionVersionFolders({ run = spawnSync, versionsDir = join(root, 'test/sdk-versions') } = {}) {
  const errors = [];
  for (const name of existsSync(versionsDir) ? readdirSync(versionsDir).sort() : []) {
    const app = join(versionsDir, name);
    const lock = join(app, 'package-lock.json');
    if (!existsSync(lock)) continue;
    // npm writes node_modules/.package-lock.json at the end of every install: its age tells a finished, current one.
    const installed = join(app, 'node_modules/.package-lock.json');
    if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) continue;
    const where = relative(root, app);
    log(`npm ci in ${where}`);
    const res = run('npm', ['ci', '--no-audit', '--no-fund', '--prefix', app], { cwd: root, stdio: 'inherit' });
    if (res.status !== 0)
      errors.push(
        `npm ci in ${where} failed (exit ${res.status ?? res.signal ?? res.error}); the SDK version tests cannot run`,
      );
  }
  return errors;
}

/** Everything; returns the list of errors (empty when the tests have what they need). */
export function provision() {
  const errors = [];
  const debian = provisionDebianPackages();
  if (debian) errors.push(debian);
  errors.push(...provisionVersionFolders());
  return errors;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const errors = provision();
  for (const e of errors) log(`FAILED: ${e}`);
  process.exit(errors.length > 0 ? 1 : 0);
}
