/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * scripts/provision.mjs, which `npm test` runs first. apt-get and npm are the system's: here they are replaced by a
 * recorder that does what they would (creates the binaries, writes the install marker) or fails, so every branch runs
 * without touching the machine's packages.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import {
  DEBIAN_BINARIES,
  POLICY_RC_D,
  provisionDebianPackages,
  provisionRuntimes,
  provisionVersionFolders,
  // @ts-expect-error: plain ESM module without types
} from '../../scripts/provision.mjs';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'forkwatch-provision-'));
  dirs.push(d);
  return d;
};

/** The Debian layout under a temporary folder, with `present` of the binaries already there. */
function binaries(present: string[] = []) {
  const dir = tempDir();
  const map = Object.fromEntries(
    Object.entries(DEBIAN_BINARIES as Record<string, string[]>).map(([pkg, bins]) => [
      pkg,
      bins.map(b => join(dir, b.split('/').pop()!)),
    ]),
  );
  for (const bin of Object.values(map).flat()) if (present.some(p => bin.endsWith(`/${p}`))) writeFileSync(bin, '');
  return map;
}

function recorder(outcome: (args: string[]) => number, effect?: (args: string[]) => void) {
  const calls: string[][] = [];
  const run = (cmd: string, args: string[]) => {
    calls.push([cmd, ...args]);
    const status = outcome(args);
    if (status === 0) effect?.(args);
    return { status, signal: null };
  };
  return { calls, run };
}

const ALL = [
  'prometheus',
  'promtool',
  'prometheus-alertmanager',
  'amtool',
  'jsonnet',
  'haproxy',
  'nginx',
  'redis-server',
];

test("the fleet lab's real parts are provisioned: haproxy, nginx-light, redis-server, by their binaries", () => {
  expect(DEBIAN_BINARIES).toMatchObject({
    haproxy: ['/usr/sbin/haproxy'],
    'nginx-light': ['/usr/sbin/nginx'],
    'redis-server': ['/usr/bin/redis-server'],
  });
});

test('everything present: nothing runs', async () => {
  const map = binaries(ALL);
  const apt = recorder(() => 0);
  expect(await provisionDebianPackages({ run: apt.run, binaries: map, isRoot: true, hasApt: true })).toBeUndefined();
  expect(apt.calls).toEqual([]);
});

test("the table names Debian's jsonnet, which compiles the pack's mixin", () => {
  expect((DEBIAN_BINARIES as Record<string, string[]>).jsonnet).toEqual(['/usr/bin/jsonnet']);
});

test('missing as root: apt-get update, then install of exactly the missing packages, without recommends, with every service start forbidden', async () => {
  const map = binaries(['prometheus', 'promtool', 'prometheus-alertmanager', 'amtool', 'jsonnet', 'haproxy']);
  const policyRcPath = join(tempDir(), 'policy-rc.d');
  const seenPolicy: string[] = [];
  const apt = recorder(
    () => 0,
    args => {
      if (args[0] !== 'install') return;
      seenPolicy.push(readFileSync(policyRcPath, 'utf8'));
      for (const pkg of ['nginx-light', 'redis-server']) for (const bin of map[pkg] ?? []) writeFileSync(bin, '');
    },
  );
  expect(
    await provisionDebianPackages({ run: apt.run, binaries: map, isRoot: true, hasApt: true, policyRcPath }),
  ).toBeUndefined();
  expect(apt.calls).toEqual([
    ['apt-get', 'update', '-qq'],
    ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'nginx-light', 'redis-server'],
  ]);
  // During the install a policy-rc.d answered 101 (no service starts on its default port); afterwards it is gone.
  expect(seenPolicy).toEqual([POLICY_RC_D]);
  expect(POLICY_RC_D).toMatch(/\nexit 101\n$/);
  expect(existsSync(policyRcPath)).toBe(false);
});

test('a policy-rc.d the machine already has is left exactly as it was', async () => {
  const map = binaries([]);
  const policyRcPath = join(tempDir(), 'policy-rc.d');
  writeFileSync(policyRcPath, '#!/bin/sh\nexit 0\n');
  const apt = recorder(() => 0);
  await provisionDebianPackages({ run: apt.run, binaries: map, isRoot: true, hasApt: true, policyRcPath });
  expect(readFileSync(policyRcPath, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
});

test('missing and not root: a failure that names the command, and nothing runs', async () => {
  const map = binaries([]);
  const apt = recorder(() => 0);
  const error = await provisionDebianPackages({ run: apt.run, binaries: map, isRoot: false, hasApt: true });
  expect(error).toMatch(
    /missing; .*Run as root: apt-get install -y --no-install-recommends prometheus prometheus-alertmanager jsonnet haproxy nginx-light redis-server$/,
  );
  expect(apt.calls).toEqual([]);
});

test('apt-get fails, or installs without the binaries: a failure each time', async () => {
  const failing = recorder(args => (args[0] === 'install' ? 100 : 0));
  const policyRcPath = join(tempDir(), 'policy-rc.d');
  expect(
    await provisionDebianPackages({
      run: failing.run,
      binaries: binaries([]),
      isRoot: true,
      hasApt: true,
      policyRcPath,
    }),
  ).toMatch(/failed \(exit 100\)$/);
  expect(existsSync(policyRcPath)).toBe(false);
  const empty = recorder(() => 0);
  expect(
    await provisionDebianPackages({ run: empty.run, binaries: binaries([]), isRoot: true, hasApt: true, policyRcPath }),
  ).toMatch(/succeeded but .* is still missing$/);
});

test('version folders: npm ci where the install is missing or older than the lockfile; a failed npm ci is an error', async () => {
  const versionsDir = tempDir();
  const folder = (name: string, installed: 'none' | 'old' | 'current') => {
    const dir = join(versionsDir, name);
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    writeFileSync(join(dir, 'package-lock.json'), '{}');
    if (installed !== 'none') {
      writeFileSync(join(dir, 'node_modules/.package-lock.json'), '{}');
      const t = installed === 'old' ? Date.now() / 1000 - 3600 : Date.now() / 1000 + 60;
      utimesSync(join(dir, 'node_modules/.package-lock.json'), t, t);
    }
  };
  folder('a-missing', 'none');
  folder('b-old', 'old');
  folder('c-current', 'current');
  mkdirSync(join(versionsDir, 'd-no-lockfile'));
  const npm = recorder(args => (args.at(-1)!.endsWith('b-old') ? 1 : 0));
  const errors = await provisionVersionFolders({ run: npm.run, versionsDir });
  expect(npm.calls.map(c => c.at(-1)!.split('/').pop())).toEqual(['a-missing', 'b-old']);
  expect(npm.calls[0]!.slice(0, 4)).toEqual(['npm', 'ci', '--no-audit', '--no-fund']);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatch(/npm ci in .*b-old failed \(exit 1\); the tests that need it cannot run/);
});

test('runtimes: each binary of scripts/runtimes.mjs must answer --version with its own line', async () => {
  const asked: string[] = [];
  // Every runtime answers its line, but the one for Node 26 is really a Node 20.
  const run = (cmd: string, args: string[]) => {
    if (cmd === 'npm') return { status: 0, signal: null };
    asked.push(`${cmd.split('/').at(-3)} ${args.join(' ')}`);
    const line = cmd.includes('/node26/') ? '20' : /\/node(\d+)/.exec(cmd)![1];
    return { status: 0, signal: null, stdout: `v${line}.1.2\n` };
  };
  const errors = await provisionRuntimes({ run });
  expect(asked).toEqual(['node22.15 --version', 'node22 --version', 'node24 --version', 'node26 --version']);
  expect(errors).toEqual([
    expect.stringMatching(/test\/runtimes\/node_modules\/node26\/bin\/node is not Node\.js 26 \(v20\.1\.2\)/),
  ]);
});

test('runtimes: the real binaries are each of their line', async () => {
  expect(await provisionRuntimes()).toEqual([]);
});
