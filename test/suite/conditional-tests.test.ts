/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * No test is defined conditionally. A `test(...)` under an `if`, a `? :`, an `&&` or a `skipIf`/`runIf` does not exist
 * where its condition is false (a Node line, a package version, a parameter of `describe.each`): vitest reports
 * nothing, so the runner's skip count (scripts/test.mjs counts skips as failures) cannot see it. Such a test is counted
 * here as skipped, that is failed: give each case its own `describe.each` table, or assert the other branch too.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { expect, test } from 'vitest';

const root = join(__dirname, '../..');
/** Installed trees, not ours. */
const SKIP_DIRS = new Set(['node_modules', 'runtimes', 'build', '.tmp']);

function testSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? [] : testSources(path);
    return /\.(?:ts|mts|cts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const DEFINERS = new Set(['test', 'it', 'describe', 'suite', 'bench']);
/** Modifiers that define a test only sometimes, or never. */
const CONDITIONAL_MODIFIERS = new Set(['skip', 'skipIf', 'runIf', 'todo', 'only', 'fails', '?:']);

/** `test`, `describe.each(...)`, `test.concurrent`: the definer's name and the modifiers on the way to it. */
function definer(callee: ts.Expression): { name: string; modifiers: string[] } | undefined {
  if (ts.isIdentifier(callee)) return DEFINERS.has(callee.text) ? { name: callee.text, modifiers: [] } : undefined;
  if (ts.isPropertyAccessExpression(callee)) {
    const inner = definer(callee.expression);
    return inner && { name: inner.name, modifiers: [...inner.modifiers, callee.name.text] };
  }
  if (ts.isCallExpression(callee)) return definer(callee.expression); // describe.each(table)(...), skipIf(c)(...)
  if (ts.isParenthesizedExpression(callee)) return definer(callee.expression);
  if (ts.isConditionalExpression(callee)) {
    // (cond ? test : describe)(...): one definer or another, by a condition
    const branch = definer(callee.whenTrue) ?? definer(callee.whenFalse);
    return branch && { name: branch.name, modifiers: [...branch.modifiers, '?:'] };
  }
  return undefined;
}

/** Why `node` (a definer's call) is defined conditionally, or undefined. */
function conditionOf(node: ts.Node): string | undefined {
  let child: ts.Node = node;
  for (let parent = node.parent; parent; child = parent, parent = parent.parent) {
    if (ts.isIfStatement(parent) && child !== parent.expression) return 'under an if';
    if (ts.isConditionalExpression(parent) && child !== parent.condition) return 'in a branch of ? :';
    if (
      ts.isBinaryExpression(parent) &&
      child === parent.right &&
      [ts.SyntaxKind.AmpersandAmpersandToken, ts.SyntaxKind.BarBarToken, ts.SyntaxKind.QuestionQuestionToken].includes(
        parent.operatorToken.kind,
      )
    )
      return `after ${parent.operatorToken.getText()}`;
    if (ts.isSwitchStatement(parent) || ts.isCaseClause(parent)) return 'in a switch case';
    if (ts.isCatchClause(parent)) return 'in a catch';
  }
  return undefined;
}

/** Every test, describe or bench of `text` defined conditionally, as `line: what`. */
function conditionalDefinitions(text: string, file = 'file.ts'): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const d = definer(node.expression);
      // The outermost call of a chain (describe.each(t)(...)): not its inner describe.each(t).
      const outer = !(ts.isCallExpression(node.parent) && node.parent.expression === node);
      if (d && outer) {
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const what = `${[d.name, ...d.modifiers.filter(m => m !== '?:')].join('.')}(`;
        const modifier = d.modifiers.find(m => CONDITIONAL_MODIFIERS.has(m));
        const why = modifier === '?:' ? 'in a branch of ? :' : modifier ? `.${modifier}` : conditionOf(node);
        if (why) found.push(`${line}: ${what} ${why}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('the check sees a test under an if, a ternary, && and skipIf, and passes a loop, a table and a plain test', () => {
  const flagged = conditionalDefinitions(
    [
      "if (process.version.startsWith('v24')) test('a', () => {});",
      "describe.each([1])('%s', n => { if (n > 0) { it('b', () => {}); } });",
      "const t = cond ? test : test.skip; (cond ? test : describe)('c', () => {});",
      "cond && test('d', () => {});",
      "test.skipIf(cond)('e', () => {});",
      'for (const x of [1, 2]) test(`f ${x}`, () => {});',
      "describe.each([1, 2])('g %s', () => { test('h', () => { if (x) expect(1).toBe(1); }); });",
    ].join('\n'),
  );
  expect(flagged).toEqual([
    '1: test( under an if',
    '2: it( under an if',
    '3: test( in a branch of ? :',
    '4: test( after &&',
    '5: test.skipIf( .skipIf',
  ]);
});

test('no test, describe or bench under test/ is defined conditionally', () => {
  const files = testSources(join(root, 'test'));
  expect(files.length).toBeGreaterThan(100);
  const found = files.flatMap(file =>
    conditionalDefinitions(readFileSync(file, 'utf8'), file).map(hit => `${relative(root, file)}:${hit}`),
  );
  expect(found).toEqual([]);
});
