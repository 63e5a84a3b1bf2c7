/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * PromQL structure from @prometheus-io/lezer-promql (pinned: node names change between releases), for lints that
 * check rules and dashboard queries: syntax errors, the selectors with their matchers, function calls, and the
 * grouping labels of the outermost aggregation.
 *
 * Lezer is error tolerant: it always returns a tree and marks syntax errors with error nodes; `errors` lists them.
 * Grafana variables ($__rate_interval, $job, ...) must be expanded before parsing.
 */
// The package is typed as ESM only but ships a CommonJS build too; vitest loads the ESM one. tsc's node16 mode
// (this repository's tsconfig) objects to the import from a CommonJS-typed file, hence the directive.
// @ts-ignore TS1479
import { parser } from '@prometheus-io/lezer-promql';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  label: string;
  op: MatchOp;
  value: string;
}

export interface SelectorRef {
  /** The metric name, from the identifier or from an `__name__="..."` matcher; undefined for `{__name__=~"..."}`. */
  name?: string;
  /** All matchers, `__name__` ones included. */
  matchers: LabelMatcher[];
  /** Source text of the selector. */
  text: string;
}

export interface FunctionCallRef {
  name: string;
  text: string;
  /** Selectors anywhere inside the call's first argument (for range functions: the range-vector argument). */
  firstArgSelectors: SelectorRef[];
}

export interface PromQLAnalysis {
  errors: { from: number; near: string }[];
  selectors: SelectorRef[];
  calls: FunctionCallRef[];
  /** `by (...)` labels of the outermost aggregation, when the expression is one (e.g. a recording rule). */
  outerGroupingLabels?: string[];
}

/** Unquotes a PromQL string literal ("...", '...' or `...`). */
export function unquote(literal: string): string {
  const q = literal[0];
  const body = literal.slice(1, -1);
  if (q === '`') return body;
  return body.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' })[c] ?? c);
}

function selectorOf(node: SyntaxNode, expr: string): SelectorRef {
  const text = expr.slice(node.from, node.to);
  const id = node.getChild('Identifier');
  const matchers: LabelMatcher[] = [];
  const lm = node.getChild('LabelMatchers');
  if (lm) {
    for (const m of lm.getChildren('UnquotedLabelMatcher')) {
      const ln = m.getChild('LabelName');
      const op = m.getChild('MatchOp');
      const sv = m.getChild('StringLiteral');
      if (!ln || !op || !sv) continue;
      matchers.push({
        label: expr.slice(ln.from, ln.to),
        op: expr.slice(op.from, op.to) as MatchOp,
        value: unquote(expr.slice(sv.from, sv.to)),
      });
    }
    for (const q of lm.getChildren('QuotedLabelName')) {
      // {"metric.name"}: a UTF-8 metric name.
      const sv = q.getChild('StringLiteral');
      if (sv) matchers.push({ label: '__name__', op: '=', value: unquote(expr.slice(sv.from, sv.to)) });
    }
  }
  const nameMatcher = matchers.find(m => m.label === '__name__' && m.op === '=');
  return { name: id ? expr.slice(id.from, id.to) : nameMatcher?.value, matchers, text };
}

function collectSelectors(node: SyntaxNode, expr: string, out: SelectorRef[]): void {
  if (node.name === 'VectorSelector') out.push(selectorOf(node, expr));
  for (let child = node.firstChild; child; child = child.nextSibling) collectSelectors(child, expr, out);
}

/** Parses one PromQL expression and returns its selectors, function calls and syntax errors. */
export function analyzePromQL(expr: string): PromQLAnalysis {
  const tree = parser.parse(expr);
  const errors: PromQLAnalysis['errors'] = [];
  const selectors: SelectorRef[] = [];
  const calls: FunctionCallRef[] = [];
  const cursor = tree.cursor();
  do {
    const node = cursor.node;
    if (node.type.isError) {
      errors.push({
        from: node.from,
        near: expr.slice(Math.max(0, node.from - 15), Math.min(expr.length, node.to + 15)),
      });
    } else if (node.name === 'VectorSelector') {
      selectors.push(selectorOf(node, expr));
    } else if (node.name === 'FunctionCall') {
      const ident = node.getChild('FunctionIdentifier');
      const body = node.getChild('FunctionCallBody');
      const firstArg = body?.firstChild;
      const firstArgSelectors: SelectorRef[] = [];
      if (firstArg) collectSelectors(firstArg, expr, firstArgSelectors);
      calls.push({
        name: ident ? expr.slice(ident.from, ident.to) : '',
        text: expr.slice(node.from, node.to),
        firstArgSelectors,
      });
    }
  } while (cursor.next());
  // An empty or whitespace-only expression parses without error nodes.
  if (expr.trim() === '' && errors.length === 0) errors.push({ from: 0, near: '' });

  let outerGroupingLabels: string[] | undefined;
  let top: SyntaxNode | null = tree.topNode.firstChild;
  while (top && top.name === 'ParenExpr') top = top.firstChild;
  if (top?.name === 'AggregateExpr') {
    const modifier = top.getChild('AggregateModifier');
    if (modifier?.getChild('By')) {
      outerGroupingLabels = modifier
        .getChild('GroupingLabels')!
        .getChildren('LabelName')
        .map(n => expr.slice(n.from, n.to));
    }
  }
  return { errors, selectors, calls, outerGroupingLabels };
}
