/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The layers of src/ (docs/architecture.md): every relative import goes from a folder to one below it, so no two
 * folders import each other, directly or round about.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { expect, test } from 'vitest';

const src = join(__dirname, '../src');

/** Lower folders first; a folder may import only folders of a lower rank (and itself). */
const RANK: Record<string, number> = {
  core: 0,
  shared: 1,
  server: 2,
  client: 3,
  'cli/probe': 2,
  'cli/drill': 2,
  'cli/exporter': 3,
  cli: 4,
  lifecycle: 4,
  '.': 5,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function folderOf(file: string): string {
  return relative(src, dirname(file)) || '.';
}

/** The folder a specifier points into: a folder itself (its index.ts), or a file's folder. */
function folderOfTarget(target: string): string {
  const isFolder = (() => {
    try {
      return statSync(target).isDirectory();
    } catch {
      return false;
    }
  })();
  return isFolder ? relative(src, target) || '.' : folderOf(`${target}.ts`);
}

const imports = sourceFiles(src).flatMap(file => {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\(\s*|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)].map(
    m => ({
      file: relative(src, file),
      from: folderOf(file),
      to: folderOfTarget(normalize(join(dirname(file), m[1]!))),
    }),
  );
});

test('every folder of src/ has a rank', () => {
  const folders = new Set(sourceFiles(src).map(folderOf));
  expect([...folders].filter(f => RANK[f] === undefined)).toEqual([]);
  expect(imports.length).toBeGreaterThan(200);
});

test('imports go down the layers only: no folder imports one that imports it back', () => {
  const upward = imports
    .filter(i => i.from !== i.to && !(RANK[i.to]! < RANK[i.from]!))
    .map(i => `${i.file} imports ${i.to}/`);
  expect(upward).toEqual([]);
});
