#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The differential host suite (issue 46): the MCP SDK's own test suites, run bare and with forkwatch preloaded, on
// Node 24 and 22; the per-test pass/fail lists must be the same. docs/host-suite.md has the last result.
//
//   node scripts/host-suite.mjs [options] <sdk checkout>...      (or FORKWATCH_HOST_SUITE_CHECKOUTS=dir1:dir2)
//
// A checkout is a work tree of the MCP TypeScript SDK: the 1.x line (package @modelcontextprotocol/sdk, npm) or the
// 2.x monorepo (packages/client and packages/server, pnpm). Nothing of it is kept in this repository.
//
// What it does:
//  1. packs this checkout (`npm pack`, whose prepack builds it) and installs the tarball alone into an empty app,
//     as a user would: the instrumented runs preload that copy (`--import .../forkwatch/build/src/register.js` in
//     NODE_OPTIONS, so every process the tests start has it too);
//  2. installs each checkout's dependencies from the npm registry with its own lockfile (npm ci, or pnpm at the
//     version its packageManager names), without install scripts: nothing of the SDK is built;
//  3. runs each suite's vitest (1.x: the whole suite, e2e included; 2.x: packages/client, packages/server, and the
//     client-server suites test/integration and test/e2e) under each runtime of test/runtimes/, bare (the checkout's
//     own config, no forkwatch variable) and instrumented, with `--reporter=json`. Test files that build the SDK's
//     bundles to read them (`ensureBuilt`, tsdown) are left out of both runs: nothing of the SDK is built;
//  4. compares the per-test statuses; a test whose status differs is run again, bare and instrumented, `--reruns`
//     times each (its file alone): a difference is real only when every rerun repeats it; a test whose bare runs
//     disagree is flaky bare, told apart and not counted;
//  5. checks that each instrumented run really patched: see PROOF below. Exits 1 on a real difference or a failed
//     proof, 2 on a usage or setup error.
//
// PROOF. The SDK's tests import its TypeScript sources (src/...), which vitest transforms and evaluates itself: they
// never pass Node's module loader, so forkwatch's module hooks (which match the published dist/ files) cannot see
// them, and a plain preload would patch nothing. The instrumented run's config (generated beside the checkout's own,
// which it extends, and removed afterwards) adds a transform: each SDK source module that defines a class forkwatch's
// hooks patch in the published package (the tables of src/lifecycle/targets.ts, read from the build: the same files,
// classes and version gates) gets one statement appended, which hands that class to the preloaded instrumentation's
// manual API (`manuallyInstrument`, docs/usage.md) when the module is evaluated — as the module hooks do, at load,
// whoever imports it, so the tests use the patched class and module load order is untouched. The run's setup file
// (scripts/host-suite/setup.mjs) records per test file which classes were found patched (shimmer's `__wrapped` on
// their methods), the forkwatch_instrumentation_info series at 1, and what forkwatch's counters counted. The proof
// fails when a loaded target class did not have every method forkwatch's patch of it wraps wrapped, when
// forkwatch/register was absent from a worker, when a class of a package's own suite was never loaded by any of its
// test files, or when forkwatch counted nothing at all.
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RUNTIMES, runtimeBinary } from './runtimes.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
const GENERATED_CONFIG = 'vitest.forkwatch-host-suite.config.mjs';
const GENERATED_SETUP = 'vitest.forkwatch-host-suite.setup.mjs';
/** One vitest run of a whole suite may not take longer (the 2.x e2e suite takes about 4 minutes on 2 cores). */
const RUN_TIMEOUT_MS = 30 * 60_000;

const USAGE = `usage: node scripts/host-suite.mjs [options] <sdk checkout>...
  --runtimes node24,node22   runtimes of test/runtimes/ (default node24,node22)
  --suites a,b               only the suites whose name contains one of these (e.g. v1, v2/client)
  --files a,b                only these test files (vitest filters), for a quick look
  --reruns N                 reruns, bare and instrumented each, of a test whose status differs (default 3)
  --no-install               use the checkouts' node_modules as they are
  --out DIR                  logs, reports and proofs (default .tmp/host-suite; not build/, which the build empties)
  --json FILE                the whole result as JSON
checkouts may also come from FORKWATCH_HOST_SUITE_CHECKOUTS (separated by ${delimiter})`;

function parseArgs(argv) {
  const options = {
    runtimes: ['node24', 'node22'],
    suites: [],
    files: [],
    reruns: 3,
    install: true,
    out: join(root, '.tmp', 'host-suite'),
    json: undefined,
    checkouts: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) usageError(`${arg} needs a value`);
      return next;
    };
    if (arg === '--runtimes') options.runtimes = value().split(',').filter(Boolean);
    else if (arg === '--suites') options.suites = value().split(',').filter(Boolean);
    else if (arg === '--files') options.files = value().split(',').filter(Boolean);
    else if (arg === '--reruns') options.reruns = Number(value());
    else if (arg === '--no-install') options.install = false;
    else if (arg === '--out') options.out = resolve(value());
    else if (arg === '--json') options.json = resolve(value());
    else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else if (arg.startsWith('-')) usageError(`unknown option ${arg}`);
    else options.checkouts.push(resolve(arg));
  }
  if (options.checkouts.length === 0 && process.env.FORKWATCH_HOST_SUITE_CHECKOUTS)
    options.checkouts = process.env.FORKWATCH_HOST_SUITE_CHECKOUTS.split(delimiter)
      .filter(Boolean)
      .map(dir => resolve(dir));
  if (options.checkouts.length === 0) usageError('no SDK checkout given');
  if (!Number.isInteger(options.reruns) || options.reruns < 1) usageError('--reruns takes an integer >= 1');
  return options;
}

function usageError(message) {
  console.error(`host-suite: ${message}\n${USAGE}`);
  process.exit(2);
}

function fail(message) {
  console.error(`host-suite: ${message}`);
  process.exit(2);
}

const log = line => console.log(`host-suite: ${line}`);
const readJson = file => JSON.parse(readFileSync(file, 'utf8'));
const seconds = ms => `${(ms / 1000).toFixed(0)} s`;

/** A command that must succeed; its output is shown only when it does not. */
function mustRun(cmd, args, options) {
  const result = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, ...options });
  if (result.status !== 0)
    fail(`${cmd} ${args.join(' ')} (in ${options.cwd}) failed:\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  return result.stdout;
}

// --- forkwatch, as a user installs it ---------------------------------------------------------------------------

function installForkwatch(out) {
  const work = join(out, 'forkwatch');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'app'), { recursive: true });
  log('packing forkwatch (npm pack builds it) and installing the tarball into an empty app');
  const packed = JSON.parse(mustRun(npm, ['pack', '--json', '--pack-destination', work], { cwd: root }));
  writeFileSync(join(work, 'app', 'package.json'), '{"name":"host-suite-app","version":"1.0.0","private":true}\n');
  mustRun(npm, ['install', '--no-audit', '--no-fund', '--loglevel=error', join(work, packed[0].filename)], {
    cwd: join(work, 'app'),
  });
  const packageJson = join(work, 'app', 'node_modules', 'forkwatch', 'package.json');
  const register = join(dirname(packageJson), 'build', 'src', 'register.js');
  if (!existsSync(register)) fail(`the installed tarball has no ${register}`);
  if (/\s/.test(register)) fail(`NODE_OPTIONS cannot carry a path with spaces: ${register}`);
  return { packageJson, register, version: readJson(packageJson).version };
}

// --- the checkouts and their suites ------------------------------------------------------------------------------

/** forkwatch's own tables of what its module hooks patch, from this checkout's build, and each class's methods. */
function loadTargets() {
  const targets = createRequire(import.meta.url)(join(root, 'build', 'src', 'lifecycle', 'targets.js'));
  const methods = Object.fromEntries(targets.ALL_TARGETS.map(t => [t.exportName, [...t.load().methods]]));
  return { ...targets, methods };
}

/** The names of the classes a TypeScript source file defines and exports (`export class X`). */
function exportedClasses(file) {
  return [...readFileSync(file, 'utf8').matchAll(/^export (?:abstract )?class (\w+)/gm)].map(m => m[1]);
}

function walk(dir, found = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') walk(path, found);
    else if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

/**
 * Test files that build the SDK's own bundles (tsdown through `pnpm`) to read them: left out of both runs. They
 * test the published bundle's contents, never load a class forkwatch patches, and nothing of the SDK is built here.
 */
function buildingTests(dir) {
  const found = [];
  const visit = folder => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'dist') visit(path);
      else if (entry.isFile() && /\.test\.[cm]?[jt]s$/.test(entry.name)) {
        if (/\bensureBuilt\(|\btsdown\b/.test(readFileSync(path, 'utf8'))) found.push(relative(dir, path));
      }
    }
  };
  visit(dir);
  return found.sort();
}

/**
 * The checkout's suites: for each, its folder, its vitest config and the SDK source files whose classes the
 * instrumented run hands to forkwatch (realpath → class names), chosen as forkwatch's hooks choose in the published
 * package.
 */
function describeCheckout(dir, tables) {
  const manifest = existsSync(join(dir, 'package.json')) ? readJson(join(dir, 'package.json')) : undefined;
  const commit = spawnSync('git', ['-C', dir, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
  const head = commit.status === 0 ? commit.stdout.trim() : undefined;
  // The 2.x monorepo's private root package is named @modelcontextprotocol/sdk too: the major tells them apart.
  if (manifest?.name === tables.SDK_V1_PACKAGE && /^1\./.test(manifest.version)) {
    const targets = {};
    for (const { file, targets: classes, versions } of tables.SDK_V1_FILES) {
      const source = join(dir, 'src', file.replace(/\.js$/, '.ts'));
      // The file's version gate, as the module hooks apply it (module-patcher.ts: `fileVersions`).
      if (!existsSync(source) || (versions && !tables.versionSatisfies(manifest.version, versions))) continue;
      const names = classes.map(t => t.exportName).filter(name => exportedClasses(source).includes(name));
      if (names.length > 0) targets[realpathSync(source)] = names;
    }
    return {
      dir,
      head,
      line: 'v1',
      versions: { [tables.SDK_V1_PACKAGE]: manifest.version },
      install: { kind: 'npm', dir },
      suites: [{ name: 'v1', dir, targets, everyTarget: true }],
    };
  }
  const packages = {
    '@modelcontextprotocol/client': 'packages/client',
    '@modelcontextprotocol/server': 'packages/server',
  };
  if (existsSync(join(dir, 'pnpm-workspace.yaml')) && Object.values(packages).every(p => existsSync(join(dir, p)))) {
    const targets = {};
    const versions = {};
    const unfound = [];
    for (const [pkg, folder] of Object.entries(packages)) {
      versions[pkg] = readJson(join(dir, folder, 'package.json')).version;
      const wanted = tables.SDK_V2_PACKAGES[pkg].map(t => t.exportName);
      const seen = new Set();
      for (const source of walk(join(dir, folder, 'src'))) {
        const names = exportedClasses(source).filter(name => wanted.includes(name));
        for (const name of names) seen.add(name);
        if (names.length > 0) targets[realpathSync(source)] = names;
      }
      for (const name of wanted) if (!seen.has(name)) unfound.push(`${pkg} ${name}`);
    }
    const only = names =>
      Object.fromEntries(Object.entries(targets).filter(([file]) => names.some(n => file.includes(n))));
    const client = only([`${join(dir, 'packages/client')}/`]);
    const server = only([`${join(dir, 'packages/server')}/`]);
    const suites = [
      { name: 'v2/client', dir: join(dir, 'packages/client'), targets: client, everyTarget: true },
      { name: 'v2/server', dir: join(dir, 'packages/server'), targets: server, everyTarget: true },
      // Client and server in one process over real HTTP: where resumes happen end to end.
      { name: 'v2/integration', dir: join(dir, 'test/integration'), targets },
      { name: 'v2/e2e', dir: join(dir, 'test/e2e'), targets },
    ].filter(suite => existsSync(suite.dir));
    return {
      dir,
      head,
      line: 'v2',
      versions,
      unfound,
      install: { kind: 'pnpm', dir, pnpm: /^pnpm@([\w.-]+)/.exec(manifest?.packageManager ?? '')?.[1] ?? '10' },
      suites,
    };
  }
  fail(`${dir} is neither an @modelcontextprotocol/sdk 1.x checkout nor the 2.x monorepo`);
}

function installCheckout({ kind, dir, pnpm }) {
  const started = Date.now();
  if (kind === 'npm') {
    log(`${dir}: npm ci --ignore-scripts`);
    mustRun(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
  } else {
    log(`${dir}: pnpm@${pnpm} install --frozen-lockfile --ignore-scripts`);
    mustRun(npx, ['-y', `pnpm@${pnpm}`, 'install', '--frozen-lockfile', '--ignore-scripts', '--reporter=silent'], {
      cwd: dir,
      env: { ...process.env, CI: 'true' },
    });
  }
  return Date.now() - started;
}

function vitestConfigOf(dir) {
  for (const name of ['vitest.config.ts', 'vitest.config.mts', 'vitest.config.js', 'vitest.config.mjs'])
    if (existsSync(join(dir, name))) return join(dir, name);
  return undefined;
}

/**
 * The instrumented run's config: the checkout's own, extended by a transform that hands each target class to the
 * preloaded forkwatch when its module is evaluated, and by the proof's setup file.
 */
function writeInstrumentedConfig(suite) {
  const base = vitestConfigOf(suite.dir);
  const setup = join(suite.dir, GENERATED_SETUP);
  copyFileSync(join(root, 'scripts', 'host-suite', 'setup.mjs'), setup);
  const baseImport = base ? `import base from ${JSON.stringify(pathToFileURL(base).href)};` : 'const base = {};';
  writeFileSync(
    join(suite.dir, GENERATED_CONFIG),
    `// Generated by forkwatch's scripts/host-suite.mjs for an instrumented run, removed after it.
import { realpathSync } from 'node:fs';
import { defineConfig, mergeConfig } from 'vitest/config';
${baseImport}

const TARGETS = ${JSON.stringify(suite.targets)};
const real = new Map();
function realpathOf(file) {
  if (!real.has(file)) {
    try {
      real.set(file, realpathSync(file));
    } catch {
      real.set(file, file);
    }
  }
  return real.get(file);
}

// Appended to a module that defines target classes: the preloaded instrumentation patches them when the module is
// evaluated, and what it found wrapped is recorded for the proof (setup file).
function handToForkwatch(file, classes) {
  return \`
;(classes => {
  const state = (globalThis[Symbol.for('forkwatch.host-suite')] ??= { loaded: [] });
  const record = { module: \${JSON.stringify(file)}, classes: {} };
  try {
    globalThis[Symbol.for('forkwatch.register')].instrumentation.manuallyInstrument(classes);
  } catch (error) {
    record.error = String(error);
  }
  for (const [name, cls] of Object.entries(classes)) {
    const proto = cls.prototype;
    record.classes[name] = Object.getOwnPropertyNames(proto).filter(
      key => Object.getOwnPropertyDescriptor(proto, key).value?.__wrapped === true,
    );
  }
  state.loaded.push(record);
})({ \${classes.join(', ')} });
\`;
}

export default defineConfig(async env =>
  mergeConfig(typeof base === 'function' ? await base(env) : base, {
    plugins: [
      {
        name: 'forkwatch-host-suite',
        enforce: 'post',
        transform(code, id) {
          if (id.startsWith('\\0')) return undefined;
          const file = realpathOf(id.split('?')[0]);
          const classes = TARGETS[file];
          if (!classes) return undefined;
          // Appended after the last line: the existing lines and their source map stay as they were.
          return { code: code + handToForkwatch(file, classes), map: null };
        },
      },
    ],
    test: { setupFiles: [${JSON.stringify(setup)}] },
  }),
);
`,
  );
}

function removeGenerated(suite) {
  for (const name of [GENERATED_CONFIG, GENERATED_SETUP]) rmSync(join(suite.dir, name), { force: true });
}

// --- one vitest run ------------------------------------------------------------------------------------------------

/** An environment with no forkwatch or OpenTelemetry variable of ours, the runtime first on PATH. */
function baseEnv(runtimeBin) {
  const env = { ...process.env, PATH: `${runtimeBin}${delimiter}${process.env.PATH ?? ''}` };
  for (const name of Object.keys(env))
    if (name === 'NODE_OPTIONS' || name.startsWith('FORKWATCH_') || name.startsWith('OTEL_')) delete env[name];
  // vitest's reporters and the SDK's tests see no CI-specific switches either way.
  env.FORCE_COLOR = '0';
  return env;
}

function runVitest({ suite, runtime, mode, files = [], tag, out, forkwatch }) {
  const node = runtimeBinary(root, runtime);
  const stem = join(out, `${suite.name.replace(/\W+/g, '-')}.${runtime.pkg}.${mode}.${tag}`);
  const report = `${stem}.json`;
  const proof = `${stem}.proof.jsonl`;
  for (const file of [report, proof]) rmSync(file, { force: true });
  const env = baseEnv(dirname(node));
  const args = [join(suite.dir, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--reporter=json'];
  args.push(`--outputFile=${report}`);
  for (const file of suite.leftOut) args.push('--exclude', file);
  if (mode === 'instrumented') {
    writeInstrumentedConfig(suite);
    args.push('--config', join(suite.dir, GENERATED_CONFIG));
    env.NODE_OPTIONS = `--import ${pathToFileURL(forkwatch.register).href}`;
    // Metrics stay in-process (the proof's reader): a Prometheus listener per vitest worker would fight over :9464.
    env.OTEL_METRICS_EXPORTER = 'none';
    env.FORKWATCH_HOST_SUITE_PROOF = proof;
    env.FORKWATCH_HOST_SUITE_PACKAGE = forkwatch.packageJson;
    writeFileSync(proof, '');
  }
  args.push(...files);
  const started = Date.now();
  return new Promise(done => {
    const child = spawn(node, args, { cwd: suite.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', chunk => output.push(chunk));
    child.stderr.on('data', chunk => output.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (mode === 'instrumented') removeGenerated(suite);
      const text = Buffer.concat(output).toString();
      writeFileSync(`${stem}.log`, text);
      const result = {
        suite: suite.name,
        runtime: runtime.pkg,
        leftOut: suite.leftOut,
        mode,
        tag,
        exitCode: code,
        signal,
        wallMs: Date.now() - started,
        log: `${stem}.log`,
        statuses: existsSync(report) ? statusesOf(readJson(report), suite.dir) : undefined,
        // vitest reports errors outside any test (unhandled rejections, exceptions) only in its output.
        unhandled: Number(/Vitest caught (\d+) unhandled errors?/.exec(text)?.[1] ?? 0),
        proof: mode === 'instrumented' && existsSync(proof) ? readProof(proof) : undefined,
      };
      done(result);
    });
  });
}

/**
 * Each test's status, keyed by file (relative to the suite) and full name; a repeated name gets `#n`. A file that
 * failed outside its tests (it did not load) counts as one entry `<file> › (file)` with its status.
 */
function statusesOf(report, dir) {
  const statuses = new Map();
  for (const file of report.testResults) {
    const rel = relative(dir, file.name);
    const seen = new Map();
    for (const test of file.assertionResults) {
      const n = (seen.get(test.fullName) ?? 0) + 1;
      seen.set(test.fullName, n);
      statuses.set(`${rel} › ${test.fullName}${n > 1 ? ` #${n}` : ''}`, test.status);
    }
    if (file.status === 'failed' && file.message) statuses.set(`${rel} › (file)`, 'failed');
  }
  return statuses;
}

function readProof(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map(line => JSON.parse(line));
}

function counts(statuses) {
  const c = { passed: 0, failed: 0, skipped: 0 };
  for (const status of statuses?.values() ?? []) {
    if (status === 'passed') c.passed++;
    else if (status === 'failed') c.failed++;
    else c.skipped++; // skipped, pending and todo: the SDK's own skips, the same list both ways
  }
  return c;
}

// --- the proof -----------------------------------------------------------------------------------------------------

/** What an instrumented run shows of forkwatch having patched the classes the tests used; `problems` empty when so. */
function checkProof(suite, run, methods) {
  const problems = [];
  const lines = run.proof ?? [];
  if (lines.length === 0) problems.push('no test file reported (the proof setup file did not run)');
  const absent = lines.filter(line => !line.instrumentation);
  if (absent.length > 0)
    problems.push(`${absent.length} test file(s) ran without forkwatch/register's instrumentation in their worker`);
  const patched = new Map(); // `file#Class` → test files that loaded it patched
  const metrics = {};
  const info = new Set();
  for (const line of lines) {
    for (const record of line.loaded) {
      if (record.error) problems.push(`${line.file}: manuallyInstrument threw: ${record.error}`);
      for (const [name, wrapped] of Object.entries(record.classes)) {
        const key = `${relative(suite.dir, record.module)}#${name}`;
        // Every method of forkwatch's patch of that class, as its module hooks wrap them in the published package.
        const unwrapped = (methods[name] ?? []).filter(method => !wrapped.includes(method));
        if (wrapped.length === 0) problems.push(`${relative(suite.dir, line.file)} loaded ${key} unpatched`);
        else if (unwrapped.length > 0)
          problems.push(`${relative(suite.dir, line.file)} loaded ${key} with ${unwrapped.join(', ')} unwrapped`);
        else patched.set(key, (patched.get(key) ?? 0) + 1);
      }
    }
    for (const [name, delta] of Object.entries(line.metrics)) metrics[name] = (metrics[name] ?? 0) + delta;
    for (const series of line.info) if (series.route === 'manual') info.add(series.sdk_class);
  }
  const expected = Object.entries(suite.targets).flatMap(([file, names]) =>
    names.map(name => `${relative(suite.dir, file)}#${name}`),
  );
  const neverLoaded = expected.filter(key => !patched.has(key));
  // A file run alone (a rerun) loads only what it imports; a package's whole suite must load each of its targets.
  if (run.tag === 'full' && suite.everyTarget && neverLoaded.length > 0)
    problems.push(`never loaded by any test file: ${neverLoaded.join(', ')}`);
  if (run.tag === 'full' && Object.keys(metrics).length === 0) problems.push('forkwatch counted nothing');
  return {
    problems,
    testFiles: lines.length,
    patched: Object.fromEntries(patched),
    neverLoaded,
    infoClasses: [...info].sort(),
    metrics,
  };
}

// --- comparing ---------------------------------------------------------------------------------------------------

function differing(bare, instrumented) {
  const names = new Set([...(bare ?? new Map()).keys(), ...(instrumented ?? new Map()).keys()]);
  return [...names].filter(name => (bare?.get(name) ?? 'missing') !== (instrumented?.get(name) ?? 'missing')).sort();
}

/** Runs each differing test's file again, bare and instrumented, and classifies each test. */
async function classify(names, context) {
  const files = [...new Set(names.map(name => name.split(' › ')[0]))];
  const reruns = { bare: [], instrumented: [] };
  for (let i = 1; i <= context.reruns; i++) {
    for (const mode of ['bare', 'instrumented']) {
      const run = await runVitest({ ...context, mode, files, tag: `rerun${i}` });
      reruns[mode].push(run);
      if (mode === 'instrumented') context.proofs.push(checkProof(context.suite, run, context.methods));
    }
  }
  return names.map(name => {
    const bare = [context.bare.statuses?.get(name) ?? 'missing'];
    const inst = [context.instrumented.statuses?.get(name) ?? 'missing'];
    for (const run of reruns.bare) bare.push(run.statuses?.get(name) ?? 'missing');
    for (const run of reruns.instrumented) inst.push(run.statuses?.get(name) ?? 'missing');
    const bareStable = bare.every(s => s === bare[0]);
    const instStable = inst.every(s => s === inst[0]);
    let verdict;
    if (!bareStable) verdict = 'flaky bare';
    else if (instStable && inst[0] !== bare[0]) verdict = 'REAL DIFFERENCE';
    else verdict = 'not reproduced';
    return { name, bare, instrumented: inst, verdict };
  });
}

// --- main ----------------------------------------------------------------------------------------------------------

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const started = Date.now();
  mkdirSync(options.out, { recursive: true });
  const runtimes = options.runtimes.map(pkg => {
    const runtime = RUNTIMES.find(r => r.pkg === pkg);
    if (!runtime) fail(`unknown runtime ${pkg} (known: ${RUNTIMES.map(r => r.pkg).join(', ')})`);
    if (!existsSync(runtimeBinary(root, runtime)))
      fail(`${runtimeBinary(root, runtime)} is missing: provision it with \`npm test -- test/footprint.test.ts\``);
    return runtime;
  });
  const forkwatchStarted = Date.now();
  const forkwatch = installForkwatch(options.out);
  const forkwatchInstallMs = Date.now() - forkwatchStarted;
  const tables = loadTargets();
  const checkouts = options.checkouts.map(dir => describeCheckout(dir, tables));
  const installMs = {};
  for (const checkout of checkouts) {
    log(
      `${checkout.dir}: ${checkout.line} ${JSON.stringify(checkout.versions)}${checkout.head ? ` at ${checkout.head}` : ''}`,
    );
    for (const name of checkout.unfound ?? []) log(`  no source file defines ${name}: nothing to patch for it`);
    if (options.install) installMs[checkout.dir] = installCheckout(checkout.install);
  }
  const suites = checkouts
    .flatMap(checkout => checkout.suites)
    .filter(suite => options.suites.length === 0 || options.suites.some(s => suite.name.includes(s)));
  for (const suite of suites) {
    if (!existsSync(join(suite.dir, 'node_modules', 'vitest', 'vitest.mjs')))
      fail(`${suite.dir} has no vitest installed`);
    suite.leftOut = buildingTests(suite.dir);
    if (suite.leftOut.length > 0) log(`${suite.name}: left out (they build the SDK): ${suite.leftOut.join(', ')}`);
  }

  const results = [];
  let real = 0;
  let proofFailures = 0;
  for (const runtime of runtimes) {
    for (const suite of suites) {
      const context = {
        suite,
        runtime,
        out: options.out,
        forkwatch,
        reruns: options.reruns,
        methods: tables.methods,
        proofs: [],
      };
      const full = { tag: options.files.length > 0 ? 'files' : 'full', files: options.files };
      const bare = await runVitest({ ...context, ...full, mode: 'bare' });
      const instrumented = await runVitest({ ...context, ...full, mode: 'instrumented' });
      const proof = checkProof(suite, instrumented, tables.methods);
      const names = differing(bare.statuses, instrumented.statuses);
      const diffs = names.length > 0 ? await classify(names, { ...context, bare, instrumented }) : [];
      const rerunProblems = context.proofs.flatMap(p => p.problems);
      const runLevel = [];
      if (!bare.statuses || !instrumented.statuses) runLevel.push('a run wrote no JSON report (see its log)');
      if (bare.unhandled !== instrumented.unhandled)
        runLevel.push(`unhandled errors: ${bare.unhandled} bare, ${instrumented.unhandled} instrumented`);
      // With every test's status the same, a run that fails one way only failed outside the tests.
      if (names.length === 0 && (bare.exitCode === 0) !== (instrumented.exitCode === 0))
        runLevel.push(`vitest exited ${bare.exitCode} bare, ${instrumented.exitCode} instrumented`);
      const result = {
        suite: suite.name,
        runtime: runtime.pkg,
        leftOut: suite.leftOut,
        bare: { ...counts(bare.statuses), wallMs: bare.wallMs, exitCode: bare.exitCode, unhandled: bare.unhandled },
        instrumented: {
          ...counts(instrumented.statuses),
          wallMs: instrumented.wallMs,
          exitCode: instrumented.exitCode,
          unhandled: instrumented.unhandled,
        },
        proof: { ...proof, problems: [...proof.problems, ...rerunProblems] },
        differences: diffs,
        runLevel,
      };
      results.push(result);
      real += diffs.filter(d => d.verdict === 'REAL DIFFERENCE').length + runLevel.length;
      proofFailures += result.proof.problems.length;
      printResult(result);
    }
  }
  const summary = {
    forkwatch: forkwatch.version,
    checkouts: checkouts.map(({ dir, head, line, versions }) => ({ dir, head, line, versions })),
    forkwatchInstallMs,
    installMs,
    totalMs: Date.now() - started,
    results,
  };
  if (options.json) writeFileSync(options.json, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(join(options.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  log(
    `${results.length} suite runs in ${seconds(summary.totalMs)}: ${real} real difference(s), ${proofFailures} proof problem(s)`,
  );
  process.exit(real > 0 || proofFailures > 0 ? 1 : 0);
}

function printResult(r) {
  const line = (mode, c) =>
    `${mode.padEnd(12)} ${String(c.passed).padStart(5)} passed ${String(c.failed).padStart(4)} failed ${String(c.skipped).padStart(4)} skipped  ${seconds(c.wallMs).padStart(6)}  exit ${c.exitCode}${c.unhandled ? `, ${c.unhandled} unhandled errors` : ''}`;
  console.log(`\n━━ ${r.suite} on ${r.runtime}`);
  console.log(`  ${line('bare', r.bare)}`);
  console.log(`  ${line('instrumented', r.instrumented)}`);
  const patched = Object.entries(r.proof.patched).map(([key, n]) => `${key} (${n} files)`);
  console.log(`  patched: ${patched.join(', ') || 'nothing'}`);
  if (r.proof.neverLoaded.length > 0) console.log(`  never loaded: ${r.proof.neverLoaded.join(', ')}`);
  console.log(`  forkwatch_instrumentation_info (route manual): ${r.proof.infoClasses.join(', ') || 'none'}`);
  console.log(
    `  forkwatch counted: ${
      Object.entries(r.proof.metrics)
        .map(([name, n]) => `${name.replace(/^forkwatch\./, '')}=${n}`)
        .join(' ') || 'nothing'
    }`,
  );
  for (const problem of r.proof.problems) console.log(`  PROOF FAILED: ${problem}`);
  for (const problem of r.runLevel) console.log(`  RUN DIFFERS: ${problem}`);
  for (const d of r.differences)
    console.log(`  ${d.verdict}: ${d.name}\n      bare ${d.bare.join(',')}  instrumented ${d.instrumented.join(',')}`);
  if (r.differences.length === 0 && r.runLevel.length === 0) console.log('  same statuses for every test');
}

await main();
