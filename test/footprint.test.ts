/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The install footprint the README and docs/production.md give is what `npm install` of the packed tarball brings
 * (scripts/footprint.mjs measures it: `npm pack`, an install into an empty app, `npm ls --all`, `du`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, test } from 'vitest';

const root = join(__dirname, '..');
let measured: { packages: number; megabytes: number };

beforeAll(async () => {
  // @ts-expect-error: plain ESM script without types
  const { measureFootprint } = await import('../scripts/footprint.mjs');
  measured = await measureFootprint();
  process.stderr.write(`npm install forkwatch: ${measured.packages} packages, ${measured.megabytes} MB\n`);
}, 300_000);

test('the README says the packages and megabytes the tarball installs', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const m = /In an empty app that brings (\d+) packages, (\d+) MB/.exec(readme);
  expect(m, 'the README states the footprint').not.toBeNull();
  expect(Number(m![1])).toBe(measured.packages);
  // Sizes move a little with every patch release of a dependency: the figure is rounded, within 10 %.
  expect(Math.abs(Number(m![2]) - measured.megabytes)).toBeLessThanOrEqual(Math.max(1, measured.megabytes * 0.1));
});

test('docs/production.md gives the same figures', () => {
  const production = readFileSync(join(root, 'docs/production.md'), 'utf8');
  const row = production.split('\n').find(l => l.startsWith('| `npm install forkwatch`'));
  expect(row).toBeDefined();
  const [packages, size] = row!
    .split('|')
    .slice(-3, -1)
    .map(c => c.trim());
  expect(Number(packages)).toBe(measured.packages);
  expect(Math.abs(Number.parseFloat(size!) - measured.megabytes)).toBeLessThanOrEqual(
    Math.max(1, measured.megabytes * 0.1),
  );
});
