/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The layers of src/ (docs/architecture.md): every relative import goes from a folder to one below it, so no two
 * folders import each other, directly or round about; and no file imports one that imports it back, directly or
 * round about (an import loop inside a folder hides which file owns what as well as one between folders).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { expect, test } from 'vitest';

const src = join(__dirname, '../src');

/**
 * Lower folders first; a folder may import only folders of a lower rank (and itself). Folders of one rank never
 * import each other: the server stacks (each one folder, docs/architecture.md) are independent.
 */
const RANK: Record<string, number> = {
  core: 0,
  shared: 1,
  // The server: the shared observers, then one folder per stack.
  server: 2,
  'server/stacks/sdk': 3,
  'server/stacks/sdk-per-request': 3,
  'server/stacks/hono': 3,
  'server/stacks/tmcp': 3,
  // The client: the one resumed-stream observer, the wire observer, the class patches (which wrap a transport's own
  // fetch with the wire observer).
  'client/observer': 2,
  'client/wire': 3,
  'client/patches': 4,
  'cli/probe': 2,
  'cli/drill': 2,
  'cli/exporter': 3,
  cli: 5,
  lifecycle: 5,
  '.': 6,
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

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The file a specifier names: `x.ts`, or a folder's `index.ts` (as Node's require and TypeScript resolve it). */
function fileOfTarget(target: string): string {
  return isFolder(target) ? join(target, 'index.ts') : `${target}.ts`;
}

/** Static imports, `import()` and the lazy `require()` calls src/ uses for modules loaded on first use. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\(\s*|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

const imports = sourceFiles(src).flatMap(file => {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(SPECIFIER)].map(m => {
    const target = fileOfTarget(normalize(join(dirname(file), m[1]!)));
    return { file: relative(src, file), target: relative(src, target), from: folderOf(file), to: folderOf(target) };
  });
});

test('every folder of src/ has a rank, and every import names a file that exists', () => {
  const folders = new Set(sourceFiles(src).map(folderOf));
  expect([...folders].filter(f => RANK[f] === undefined)).toEqual([]);
  expect(imports.length).toBeGreaterThan(200);
  const files = new Set(sourceFiles(src).map(f => relative(src, f)));
  expect(imports.filter(i => !files.has(i.target)).map(i => `${i.file} imports ${i.target}`)).toEqual([]);
});

test('imports go down the layers only: no folder imports one that imports it back', () => {
  const upward = imports
    .filter(i => i.from !== i.to && !(RANK[i.to]! < RANK[i.from]!))
    .map(i => `${i.file} imports ${i.to}/`);
  expect(upward).toEqual([]);
});

test('the client and the server never import each other', () => {
  const sides = (i: { from: string; to: string }) => `${i.from.split('/')[0]} -> ${i.to.split('/')[0]}`;
  const across = imports
    .filter(i => sides(i) === 'client -> server' || sides(i) === 'server -> client')
    .map(i => `${i.file} imports ${i.target}`);
  expect(across).toEqual([]);
});

test('a server stack folder is reached only through its row in lifecycle/targets.ts', () => {
  const intoStacks = imports
    .filter(i => i.to.startsWith('server/stacks/') && i.from !== i.to)
    .filter(i => i.file !== 'lifecycle/targets.ts' || !i.target.endsWith('/index.ts'))
    .map(i => `${i.file} imports ${i.target}`);
  expect(intoStacks).toEqual([]);
});

/** The import loops of src/: the strongly connected components of its file graph with more than one file (Tarjan). */
function importLoops(edges: readonly { file: string; target: string }[]): string[][] {
  const graph = new Map<string, string[]>();
  for (const { file, target } of edges) {
    graph.set(file, [...(graph.get(file) ?? []), target]);
    if (!graph.has(target)) graph.set(target, []);
  }
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) loops.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return loops;
}

test('no import loop: no file of src/ imports one that imports it back, directly or round about', () => {
  // A self-check of the finder: a loop of three files, and a file importing itself is no loop of files.
  expect(
    importLoops([
      { file: 'a', target: 'b' },
      { file: 'b', target: 'c' },
      { file: 'c', target: 'a' },
      { file: 'c', target: 'd' },
    ]),
  ).toEqual([['a', 'b', 'c']]);
  expect(importLoops(imports)).toEqual([]);
});
