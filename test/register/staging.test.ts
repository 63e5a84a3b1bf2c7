/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The register tests' staged package (support.ts) across clones: two clones of one commit, tested one after the
 * other with the first deleted in between. The second clone's stage must resolve its dependencies (it once reused
 * the first clone's stage, whose node_modules link pointed into the deleted clone).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { ROOT, copyTree, forkwatchPackage } from './support';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** One commit: this checkout's files as they are now, with a marker that no stage of this checkout shares. */
function commitSnapshot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-commit-'));
  made.push(dir);
  copyTree(ROOT, dir);
  writeFileSync(join(dir, 'src', 'clone-marker.txt'), `${process.pid}-${Date.now()}`);
  return dir;
}

/** A clone of the commit with its own node_modules folder (links to this checkout's packages, as npm ci would). */
function cloneOf(commit: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'forkwatch-clone-'));
  made.push(dir);
  copyTree(commit, dir);
  mkdirSync(join(dir, 'node_modules'));
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (!entry.startsWith('.')) symlinkSync(join(ROOT, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  return dir;
}

test('two clones of one commit, the first deleted before the second is tested: the second stage loads', () => {
  const commit = commitSnapshot();
  const first = cloneOf(commit);
  const firstStage = forkwatchPackage(first);
  made.push(firstStage);
  rmSync(first, { recursive: true, force: true });

  const second = cloneOf(commit);
  const secondStage = forkwatchPackage(second);
  made.push(secondStage);
  const loaded = execFileSync(
    process.execPath,
    ['-e', "require('./build/src/index.js'); process.stdout.write(require.resolve('@opentelemetry/api'))"],
    { cwd: secondStage, encoding: 'utf8' },
  );
  expect(loaded).toContain('@opentelemetry/api');
}, 300_000);
