#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The install footprint the README gives: `npm pack` this checkout, `npm install` the tarball alone into an empty
// app, then count the packages `npm ls --all` lists and the megabytes of node_modules (`du -sk`). Prints one JSON
// line `{"packages":N,"megabytes":M,"npm":V}` (npm versions resolve optional peers differently: the README's
// figure is Node.js 24's npm, as the test runs it); test/footprint.test.ts holds the README to it.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

export async function measureFootprint() {
  const work = mkdtempSync(join(tmpdir(), 'forkwatch-footprint-'));
  try {
    const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', work], {
      cwd: root,
      maxBuffer: 16 << 20,
    });
    const tarball = join(work, JSON.parse(stdout)[0].filename);
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), '{"name":"footprint-app","version":"1.0.0","private":true}\n');
    await run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball], {
      cwd: app,
      maxBuffer: 16 << 20,
      timeout: 240_000,
    });
    const ls = await run(npm, ['ls', '--all', '--parseable'], { cwd: app, maxBuffer: 64 << 20 }).catch(
      error => ({ stdout: String(error.stdout ?? '') }), // npm ls exits 1 on unmet optional peers
    );
    const packages = new Set(ls.stdout.split('\n').filter(line => line.includes('node_modules'))).size;
    const { stdout: du } = await run('du', ['-sk', join(app, 'node_modules')]);
    const { stdout: npmVersion } = await run(npm, ['--version']);
    return { packages, megabytes: Math.round((Number(du.split('\t')[0]) / 1024) * 10) / 10, npm: npmVersion.trim() };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureFootprint()));
}
