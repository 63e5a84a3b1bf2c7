/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * PromQL analysis for the dashboard lint, with @prometheus-io/lezer-promql (the grammar Prometheus' own UI uses;
 * node names are those of the pinned 0.315.0). Beyond test/support/promql.ts it expands Grafana variables first and
 * records the context dashboard-linter's rules need: which function takes each range selector, and its range.
 */
import type { SyntaxNode } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';
import { unquote } from '../support/promql';

/**
 * Grafana variables cannot be parsed, so they are replaced by sample values first, outside double-quoted strings
 * only (`job=~"$job"` stays a string), like dashboard-linter's lint/variables.go. The sentinel durations are
 * dashboard-linter's, so a range can be traced back to the variable it came from.
 */
export const SAMPLE_DURATIONS: Record<string, string> = {
  __rate_interval: '8869990787ms',
  __interval: '4867856611ms',
  __range: '6069770749ms',
  __auto: '12345ms',
};

export function expandForParsing(expr: string): string {
  return expr
    .split('"')
    .map((part, i) =>
      i % 2 === 1 ? part : part.replace(/\$\{?(\w+)\}?/g, (_, name: string) => SAMPLE_DURATIONS[name] ?? name),
    )
    .join('"');
}

export interface Matcher {
  name: string;
  op: string;
  value: string;
}

export interface Selector {
  /** Metric name, from the identifier or an `__name__="…"` matcher; undefined for `{__name__=~"…"}`. */
  metric: string | undefined;
  matchers: Matcher[];
  /** The function whose range-vector argument this selector is (`rate` in `rate(x[5m])`), if any. */
  rangeFunction: string | undefined;
}

export interface RangeUse {
  /** The enclosing function, undefined when the range selector stands outside a function call. */
  fn: string | undefined;
  range: string;
}

export interface Analysis {
  expr: string;
  syntaxErrors: string[];
  selectors: Selector[];
  ranges: RangeUse[];
  functions: string[];
}

const skipOffset = (n: SyntaxNode | null) => (n?.name === 'OffsetExpr' ? n.parent : n);

function callOf(arg: SyntaxNode | null, text: (n: SyntaxNode | null) => string): string | undefined {
  const body = skipOffset(arg);
  if (body?.name !== 'FunctionCallBody' || body.parent?.name !== 'FunctionCall') return undefined;
  return text(body.parent.getChild('FunctionIdentifier'));
}

export function analyse(rawExpr: string): Analysis {
  const expr = expandForParsing(rawExpr);
  const text = (n: SyntaxNode | null) => (n ? expr.slice(n.from, n.to) : '');
  const result: Analysis = { expr, syntaxErrors: [], selectors: [], ranges: [], functions: [] };
  const cursor = parser.parse(expr).cursor();
  do {
    const n = cursor.node;
    if (n.type.isError) {
      result.syntaxErrors.push(`syntax error at ${n.from}: …${expr.slice(Math.max(0, n.from - 20), n.to + 20)}…`);
    } else if (n.name === 'VectorSelector') {
      const matchers = (n.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []).map(m => ({
        name: text(m.getChild('LabelName')),
        op: text(m.getChild('MatchOp')),
        value: unquote(text(m.getChild('StringLiteral')) || '""'),
      }));
      const id = n.getChild('Identifier');
      const byName = matchers.find(m => m.name === '__name__' && m.op === '=');
      const matrix = skipOffset(n.parent);
      const rangeFunction = matrix?.name === 'MatrixSelector' ? callOf(matrix.parent, text) : undefined;
      result.selectors.push({ metric: id ? text(id) : byName?.value, matchers, rangeFunction });
    } else if (n.name === 'MatrixSelector') {
      result.ranges.push({ fn: callOf(n.parent, text), range: text(n.getChild('DurationExpr')) });
    } else if (n.name === 'FunctionIdentifier') {
      result.functions.push(text(n));
    }
  } while (cursor.next());
  return result;
}

/** `label_values(selector, label)` / `label_values(label)`: the selector part as PromQL, or an error. */
export function analyseLabelValues(query: string): { selector?: Analysis; label: string } | { error: string } {
  const m = /^label_values\((?:(.+),\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\)$/.exec(query.trim());
  if (!m) return { error: `not label_values(selector, label): ${query}` };
  const label = m[2] as string;
  return m[1] === undefined ? { label } : { selector: analyse(m[1]), label };
}
