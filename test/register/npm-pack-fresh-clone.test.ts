/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `npm pack` on a fresh copy of the tree (the files git tracks or would track: no build/, no node_modules of its own
 * but a link to this clone's, as `npm ci` would give): prepack builds, so the tarball carries the code. Then the
 * tarball installed alone into an empty app: `require('forkwatch')` works, and `npx forkwatch pack` renders the pack
 * there with no clone and no tsx, and promtool accepts its rules.
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BIN, runTool } from '../support/prometheus';

const run = promisify(execFile);
const ROOT = join(__dirname, '../..');
let work: string;
let app: string;
let files: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'forkwatch-fresh-'));
  const clone = join(work, 'clone');
  const tracked = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(f => f && existsSync(join(ROOT, f)));
  for (const file of tracked) {
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    cpSync(join(ROOT, file), join(clone, file));
  }
  expect(existsSync(join(clone, 'build'))).toBe(false);
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: clone,
    maxBuffer: 64 << 20,
    timeout: 240_000,
  });
  const packed = JSON.parse(stdout.slice(stdout.indexOf('[')))[0] as { filename: string; files: { path: string }[] };
  files = packed.files.map(f => f.path).sort();

  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'empty-app', version: '1.0.0', private: true }));
  const install = () =>
    run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', join(work, packed.filename)],
      { cwd: app, maxBuffer: 16 << 20, timeout: 180_000 },
    );
  await install().catch(async error => {
    process.stderr.write(
      `npm install failed once, retrying: ${String((error as { stderr?: string }).stderr ?? error)}\n`,
    );
    await install();
  });
}, 480_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm pack on a fresh copy of the tree', () => {
  test('prepack built it: the tarball carries the code, the bundled pack, the schemas, rules and dashboards', () => {
    for (const required of [
      'build/src/index.js',
      'build/src/index.d.ts',
      'build/src/register.js',
      'build/src/cli/main.js',
      'build/esm/index.mjs',
      'build/pack/forkwatch-pack.js',
      'schema/pack-config.schema.json',
      'schema/probe-report.schema.json',
      'dashboards/forkwatch-overview.json',
      'alerts/forkwatch-alerts.rules.yml',
      'alerts/runbooks/ForkwatchForksDetected.md',
      'package.json',
      'README.md',
    ])
      expect(files, required).toContain(required);
    expect(
      files.filter(f => /^(pack|src|test|scripts|lab)\//.test(f) || /\.ts$/.test(f.replace(/\.d\.ts$/, ''))),
    ).toEqual([]);
  });
});

describe('the tarball installed alone into an empty app', () => {
  test("require('forkwatch') works", async () => {
    const { stdout } = await run(
      process.execPath,
      ['-e', "const f = require('forkwatch'); console.log(typeof f.ForkwatchInstrumentation)"],
      { cwd: app },
    );
    expect(stdout.trim()).toBe('function');
  });

  test('npx forkwatch pack --config my.json --out dir renders the pack, and promtool accepts its rules', async () => {
    writeFileSync(join(app, 'my.json'), JSON.stringify({ selector: 'job=~"mcp-.*"', aggregationLabels: [] }));
    const { stdout, stderr } = await run(
      'npx',
      ['--no-install', 'forkwatch', 'pack', '--config', 'my.json', '--out', 'dir'],
      {
        cwd: app,
        timeout: 60_000,
      },
    );
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^wrote .*\/dir\/prometheus\/forkwatch-alerts\.rules\.yml$/m);
    const alerts = readFileSync(join(app, 'dir/prometheus/forkwatch-alerts.rules.yml'), 'utf8');
    expect(alerts).toContain('sum by (job, transport, reason)');
    expect(existsSync(join(app, 'dir/mixin/mixin.libsonnet'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/tsx'))).toBe(false);
    const check = await runTool(BIN.promtool, [
      'check',
      'rules',
      join(app, 'dir/prometheus/forkwatch-recording.rules.yml'),
      join(app, 'dir/prometheus/forkwatch-alerts.rules.yml'),
    ]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });
});
