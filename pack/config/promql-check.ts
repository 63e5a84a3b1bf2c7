/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The config's selector and every rendered expression, parsed as PromQL with @prometheus-io/lezer-promql (bundled
 * into build/pack, so the installed package needs no parser of its own). Lezer is error tolerant: it marks what it
 * cannot parse with error nodes, and each one becomes a problem line.
 */
// The package is typed as ESM only but ships a CommonJS build too (see test/support/promql.ts).
// @ts-expect-error TS1479
import { parser } from '@prometheus-io/lezer-promql';

/** The offset of the first syntax error, or undefined when the text parses. */
function errorOffset(text: string): number | undefined {
  let at: number | undefined;
  parser.parse(text).iterate({
    enter: (node: { type: { isError: boolean }; from: number }) => {
      if (at === undefined && node.type.isError) at = node.from;
    },
  });
  return at;
}

const near = (text: string, at: number) =>
  JSON.stringify(text.slice(Math.max(0, at - 10), at + 10).replace(/\s+/g, ' '));

/** Where the text fails to parse, or undefined when it parses. */
export function promqlError(text: string): string | undefined {
  const at = errorOffset(text);
  return at === undefined ? undefined : `not valid PromQL at character ${at + 1} (near ${near(text, at)})`;
}

/** The selector is label matchers only: `job=~"mcp-.*", namespace="prod"`. */
export function selectorProblem(selector: string): string | undefined {
  if (selector.trim() === '') return undefined;
  if (/[{}]/.test(selector)) return 'selector: label matchers without braces, e.g. job=~"mcp-.*"';
  const prefix = 'up{';
  const at = errorOffset(`${prefix}${selector}}`);
  if (at === undefined) return undefined;
  const offset = Math.min(Math.max(0, at - prefix.length), selector.length);
  return `selector ${JSON.stringify(selector)}: not valid PromQL label matchers at character ${offset + 1} (near ${near(selector, offset)})`;
}
