/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Child-process harness for `forkwatch/register`: a private build of forkwatch laid out as the installed package,
 * app folders that resolve `forkwatch/...` through their own node_modules (the way users' apps do), the fork lab's
 * server and proxy, and a process runner that keeps every byte of stdout and stderr.
 *
 * The private build (the project's tsc config, written to a temporary folder keyed by a hash of the package's
 * sources) keeps these tests independent of build/, which other jobs delete and rebuild.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { onTestFinished } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { startServer } from '../../lab/harness.mjs';
// @ts-expect-error: plain ESM module without types
import { startProxy } from '../../lab/proxy.mjs';

export { leasePort, waitUntil } from '../support/prometheus';
export { parseMetricFamilies, type MetricFamily } from '../support/scrape';

export const ROOT = join(__dirname, '../..');

/**
 * Whether forkwatch/register installs synchronous loader hooks (module.registerHooks) on this runtime, as
 * lifecycle/esm-loader.ts decides: import-in-the-middle's own predicate. The children run `process.execPath`.
 */
export async function syncLoaderHooks(): Promise<boolean> {
  const nodeModule = (await import('node:module')) as { registerHooks?: unknown };
  if (typeof nodeModule.registerHooks !== 'function') return false;
  const { supportsSyncHooks } = await import('import-in-the-middle/supports-sync-hooks.mjs' as string);
  return supportsSyncHooks() === true;
}
export const LAB_DIR = join(ROOT, 'lab');
export const FIXTURES = join(__dirname, 'fixtures');

// ---------------------------------------------------------------------------------------------------------------
// The package

/** Files that make up the package (and so the build key). */
function packageInputs(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  for (const dir of ['src', 'dashboards', 'alerts']) if (existsSync(join(root, dir))) walk(join(root, dir));
  for (const file of ['package.json', 'tsconfig.json', 'README.md'])
    if (existsSync(join(root, file))) files.push(join(root, file));
  return files.sort();
}

const SKIP_IN_STAGE = new Set(['node_modules', '.git', 'build', '.tmp', 'coverage']);

let stagedPackage: string | undefined;

/**
 * Copies the repository as `npm pack` would see it, minus node_modules (at any depth), .git, build/, .tmp/. Files that
 * vanish while it copies (other jobs work in the same checkout) are skipped rather than failing the copy.
 */
export function copyTree(from: string, to: string, root = from): void {
  mkdirSync(to, { recursive: true });
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(from, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    if (entry.name === 'node_modules' || entry.name.endsWith('.tgz')) continue;
    if (from === root && SKIP_IN_STAGE.has(entry.name)) continue;
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) copyTree(source, target, root);
    else if (entry.isFile()) {
      try {
        cpSync(source, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}

/** Builds of older sources, left by earlier runs (an hour old: a concurrent run may still use a recent one). */
function removeStaleStages(keep: string): void {
  for (const entry of readdirSync(tmpdir())) {
    const path = join(tmpdir(), entry);
    if (!entry.startsWith('forkwatch-register-pkg-') || path === keep) continue;
    try {
      if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
    } catch {
      // gone already
    }
  }
}

/**
 * A folder that is the forkwatch repository as `npm pack` sees it (everything but node_modules, .git, build/,
 * .tmp/), with a fresh build/ (tsc + the ESM entry wrappers, as scripts/build.mjs writes them) and a node_modules
 * link to the checkout's dependencies. Built once per content of the package's sources and per node_modules it
 * links: a stage of another clone of the same commit would break when that clone is deleted.
 */
export function forkwatchPackage(root = ROOT): string {
  if (root === ROOT && stagedPackage) return stagedPackage;
  const hash = createHash('sha256');
  for (const file of packageInputs(root))
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  hash.update(realpathSync(join(root, 'node_modules')));
  const final = join(tmpdir(), `forkwatch-register-pkg-${hash.digest('hex').slice(0, 16)}`);
  const remember = (stage: string) => {
    if (root === ROOT) stagedPackage = stage;
    return stage;
  };
  if (existsSync(join(final, 'build/src/register.js')) && existsSync(join(final, 'node_modules/@opentelemetry/api')))
    return remember(final);
  removeStaleStages(final);
  // A stage whose linked node_modules went away (its clone deleted and made again at the same path) is rebuilt.
  rmSync(final, { recursive: true, force: true });

  const work = `${final}.tmp-${process.pid}-${Date.now()}`;
  copyTree(root, work);
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', join(work, 'tsconfig.json')], { stdio: 'pipe', cwd: work });
  } catch (error) {
    // tsc emits even when files elsewhere in src/ have type errors (`npx tsc --noEmit` is what checks types).
    if (!existsSync(join(work, 'build/src/register.js'))) throw error;
  }
  symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir');
  // The ESM entry wrappers, exactly as scripts/build.mjs derives them from the CommonJS exports.
  const wrapperScript = `
    const { mkdirSync, writeFileSync } = require('node:fs');
    const { join } = require('node:path');
    const root = process.argv[1];
    mkdirSync(join(root, 'build/esm'), { recursive: true });
    for (const [file, target] of Object.entries({ 'index.mjs': '../src/index.js', 'prom-client.mjs': '../src/prom-client.js' })) {
      const names = Object.keys(require(join(root, 'build/esm', target)));
      const body = [\`import cjs from '\${target}';\`, ...names.filter(n => n !== 'default' && n !== '__esModule').map(n => \`export const \${n} = cjs.\${n};\`), 'export default cjs;', ''].join('\\n');
      writeFileSync(join(root, 'build/esm', file), body);
    }`;
  execFileSync(process.execPath, ['-e', wrapperScript, work], { stdio: 'pipe' });
  try {
    renameSync(work, final);
  } catch {
    // Another test file finished the same build first.
    rmSync(work, { recursive: true, force: true });
  }
  return remember(final);
}

/** What `npm pack --json` says of the tarball it wrote, and where it is. */
export interface PackedForkwatch {
  tarball: string;
  filename: string;
  files: { path: string }[];
}

/**
 * `npm pack` of the staged package (its prepack builds again, as in a user's `npm pack`), once per stage: the
 * tarball and what npm said of it are kept beside the stage, so the test files that install it, on every Node.js
 * line, pay for one build per run instead of one each (npm-pack-fresh-clone.test.ts still packs a fresh copy of the
 * tree on every line: that prepack builds is what it proves).
 */
export async function packedForkwatch(): Promise<PackedForkwatch> {
  const stage = forkwatchPackage();
  const kept = `${stage}.packed`;
  const record = join(kept, 'pack.json');
  if (existsSync(record)) {
    const packed = JSON.parse(readFileSync(record, 'utf8')) as Omit<PackedForkwatch, 'tarball'>;
    const tarball = join(kept, packed.filename);
    if (existsSync(tarball)) return { ...packed, tarball };
  }
  const work = `${kept}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(work, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(npm, ['pack', '--json', '--pack-destination', work], { cwd: stage, maxBuffer: 16 << 20 }, (error, out) =>
      error ? reject(error) : resolve(out),
    ),
  );
  const { filename, files } = JSON.parse(stdout.slice(stdout.indexOf('[')))[0] as Omit<PackedForkwatch, 'tarball'>;
  writeFileSync(join(work, 'pack.json'), JSON.stringify({ filename, files }));
  try {
    renameSync(work, kept);
  } catch {
    // Another test file packed the same stage first: its copy is the same package.
    rmSync(work, { recursive: true, force: true });
  }
  return { filename, files, tarball: join(kept, filename) };
}

// ---------------------------------------------------------------------------------------------------------------
// App folders

export interface AppDir {
  dir: string;
  remove(): void;
}

/**
 * A temporary app folder: its node_modules links every dependency of the repository plus `forkwatch` (the staged
 * package), and the fixtures are copied in, so `node --require forkwatch/register app.cjs` resolves as in a user's app.
 */
export function makeAppDir(fixtureDirs: string[] = [FIXTURES], pkg = forkwatchPackage()): AppDir {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-app-'));
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry.startsWith('.') || entry === 'forkwatch') continue;
    symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry));
  }
  symlinkSync(pkg, join(modules, 'forkwatch'), 'dir');
  for (const fixtures of fixtureDirs)
    for (const file of readdirSync(fixtures)) cpSync(join(fixtures, file), join(dir, file));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

export interface AppProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** stderr lines written by forkwatch (its diagnostics all start with `forkwatch:`). */
  forkwatchLines(): string[];
  /** Resolves with the first match of `pattern` in stderr; rejects when the process exits first or on timeout. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The fixture's `FIXTURE DONE {json}` report. */
  done(timeoutMs?: number): Promise<FixtureSummary>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal and waits for the exit (SIGKILL after `timeoutMs`). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface FixtureSummary {
  lost: number;
  emitted: number;
  resumes: number[];
  patched: boolean;
  /** Names of the errors the MCP client's onerror received. */
  errors?: string[];
}

/** The environment of a child app: the test's own, minus anything that would configure OpenTelemetry or Node. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(OTEL_|FORKWATCH_|NODE_OPTIONS$|NODE_PATH$|VITEST|FIXTURE_)/.test(key)) continue;
    env[key] = value;
  }
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `node <args>` (or `command <args>`) in `cwd`. With a command other than node (npm start), the child runs in
 * a process group of its own, and signals go to the group, so that what it spawned goes too.
 */
export function startApp(opts: {
  cwd: string;
  args: string[];
  env?: Record<string, string | undefined>;
  command?: string;
}): AppProcess {
  const group = opts.command !== undefined;
  const child = spawn(opts.command ?? process.execPath, opts.args, {
    cwd: opts.cwd,
    env: cleanEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (group && child.pid) process.kill(-child.pid, sig);
      else child.kill(sig);
    } catch {
      // already gone
    }
  };
  running.add(child);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', chunk => (out += chunk));
  child.stderr!.on('data', chunk => {
    err += chunk;
    for (const l of listeners) l();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(resolve =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      // Let the pipes drain.
      setImmediate(() => {
        for (const l of listeners) l();
        resolve({ code, signal });
      });
    }),
  );
  let exitedState: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void exited.then(s => (exitedState = s));

  const waitForStderr = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(err);
        if (m) {
          cleanup();
          resolve(m);
        } else if (exitedState) {
          cleanup();
          reject(
            new Error(
              `process exited (${JSON.stringify(exitedState)}) before ${pattern} appeared; stderr:\n${err}\nstdout:\n${out}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${pattern}; stderr:\n${err}\nstdout:\n${out}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const app: AppProcess = {
    child,
    stdout: () => out,
    stderr: () => err,
    forkwatchLines: () => err.split('\n').filter(line => line.startsWith('forkwatch:')),
    waitForStderr,
    async done(timeoutMs = 30_000) {
      const m = await waitForStderr(/FIXTURE (DONE (.*)|FAILED[\s\S]*)\n/, timeoutMs);
      if (!m[2]) throw new Error(`fixture failed:\n${err}`);
      return JSON.parse(m[2]) as FixtureSummary;
    },
    exited,
    async stop(sig = 'SIGTERM', timeoutMs = 10_000) {
      if (!exitedState || group) signal(sig);
      const killer = setTimeout(() => signal('SIGKILL'), timeoutMs);
      const state = await exited;
      clearTimeout(killer);
      return state;
    },
  };
  // Whatever the test's outcome, the process does not outlive it.
  onTestFinished(async () => {
    await app.stop('SIGKILL');
  });
  return app;
}

// ---------------------------------------------------------------------------------------------------------------
// The fork lab and scrapes

export interface Lab {
  /** A fresh proxy in front of the lab server (each app gets its own, so its request log is its own). */
  proxy(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * The fork lab's two MCP servers (real SDK, integer event ids) and lab proxies. Everything goes to A, which holds the
 * session's log, unless a scenario routes the resume to B, which claims the session without its log and starts its
 * ids again from 1 (the `live-fork` and `fail-loud` scenarios).
 *
 * The ids are one counter per session, so a POST answered as an SSE stream (its result stored too) puts a gap between
 * the standalone stream's events: the client then never learns the numbering is dense and counts no skipped events
 * (core/density.ts). `jsonResponse` answers POSTs with JSON instead: the standalone stream's ids are consecutive
 * (1, 2, 3, ...), and a resume records forkwatch.client.resume.skipped_events.
 */
export async function startLab({ jsonResponse = false } = {}): Promise<Lab> {
  const a = await startServer({ name: 'A', store: { idFormat: 'integer' }, ...(jsonResponse ? { jsonResponse } : {}) });
  const b = await startServer({
    name: 'B',
    store: { idFormat: 'integer', unknownCursor: 'fresh' },
    hydrate: true,
    ticker: { everyMs: 150, count: 2 },
  });
  const proxies: { close(): Promise<void> }[] = [];
  return {
    async proxy() {
      const proxy = await startProxy({ A: a.url, B: b.url }, { post: 'A', get: 'A', resume: 'A' });
      proxies.push(proxy);
      return proxy.url as string;
    },
    async stop() {
      await Promise.all(proxies.map(p => p.close()));
      a.stop();
      b.stop();
    },
  };
}

/** The environment a client fixture needs to run its lab scenario, with a proxy of its own. */
export async function labEnv(lab: Lab): Promise<Record<string, string>> {
  return { FIXTURE_LAB_DIR: LAB_DIR, FIXTURE_PROXY_URL: await lab.proxy() };
}

/**
 * The metrics text on the port. register opens its port once resource detection settled (up to 2 s after its SDK
 * started, later on a busy machine), so a refused connection is retried for up to `timeoutMs`: the scrape waits for
 * the port rather than racing it. (Tests that expect a closed port use refusesConnections.)
 */
export async function scrapeText(
  port: number,
  path = '/metrics',
  { host = '127.0.0.1', timeoutMs = 30_000 } = {},
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let res: Response;
    try {
      res = await fetch(`http://${host}:${port}${path}`);
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (code !== 'ECONNREFUSED' || Date.now() > deadline) throw error;
      await new Promise(r => setTimeout(r, 100));
      continue;
    }
    if (!res.ok) throw new Error(`GET ${host}:${port}${path}: HTTP ${res.status}`);
    return res.text();
  }
}

/** True when nothing accepts connections on the port. */
export async function refusesConnections(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3000) });
    return false;
  } catch (error) {
    return /ECONNREFUSED/.test(String((error as { cause?: unknown }).cause ?? error));
  }
}

/** Samples of an exposition as `name{label="value",...}` (labels sorted) → value. */
export function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable sample: ${line}`);
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(l => `${l[1]}="${l[2]}"`)
      .sort();
    samples.set(`${m[1]}{${labels.join(',')}}`, Number(m[3]));
  }
  return samples;
}

/** The value of one sample, matched by name and a subset of labels (undefined if none matches). */
/** The shared sample lookup, under the name these tests use. */
export { sample as sampleValue } from '../support/scrape';

export function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}
