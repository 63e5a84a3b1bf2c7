/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * No function in src/ is longer than MAX_LINES lines: a function a maintainer cannot read on one screen does more
 * than one thing. Every function-like node with a body counts (declarations, methods, constructors, accessors,
 * arrow functions and function expressions), from its first line to its last, nested functions included: a short
 * function that only wraps a long closure is as long as the closure.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { expect, test } from 'vitest';

const SRC = join(__dirname, '../src');
const MAX_LINES = 100;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface FunctionSpan {
  where: string;
  lines: number;
}

/** Every function-like node with a body in `text`, and how many lines it spans. */
function functionSpans(file: string, text: string): FunctionSpan[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const spans: FunctionSpan[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = node.name?.getText(source) ?? ts.SyntaxKind[node.kind];
      spans.push({ where: `${file}:${first + 1} ${name}`, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return spans;
}

test(`no function in src/ is longer than ${MAX_LINES} lines`, () => {
  const spans = sources(SRC).flatMap(file => functionSpans(relative(SRC, file), readFileSync(file, 'utf8')));
  expect(spans.length).toBeGreaterThan(1000);
  const long = spans.filter(s => s.lines > MAX_LINES).map(s => `${s.where}: ${s.lines} lines`);
  expect(long).toEqual([]);
});

test('the count sees every kind of function, nested ones included', () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
  const text = [
    `function declared() {\n${body(3)}\n}`,
    `const arrow = () => {\n${body(101)}\n};`,
    `class C {\n  method() {\n    return () => {\n${body(2)}\n    };\n  }\n  get x() {\n    return 1;\n  }\n}`,
    'declare function bodiless(): void;',
  ].join('\n');
  const spans = functionSpans('sample.ts', text).map(s => [s.where.replace(/^sample\.ts:\d+ /, ''), s.lines]);
  expect(spans).toEqual([
    ['declared', 5],
    ['ArrowFunction', 103],
    ['method', 6],
    ['ArrowFunction', 4],
    ['x', 3],
  ]);
});
