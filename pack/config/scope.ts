/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** PromQL building blocks that carry the config's selector and aggregation labels into every expression. */
import type { ForkwatchConfig } from './config';

export interface Scope {
  /** `metric{selector, extra...}`. */
  sel(metric: string, ...matchers: string[]): string;
  /** `{__name__=~"...", selector}`: every series whose name matches. */
  named(nameRegex: string): string;
  /** `cluster, namespace, job, ...extra`: the labels every aggregation keeps. */
  by(...extra: string[]): string;
}

export function scope(config: ForkwatchConfig): Scope {
  const matchers = (...extra: string[]) => [config.selector, ...extra].map(m => m.trim()).filter(Boolean);
  return {
    sel: (metric, ...extra) => {
      const m = matchers(...extra);
      return m.length > 0 ? `${metric}{${m.join(', ')}}` : metric;
    },
    named: nameRegex => `{${matchers(`__name__=~"${nameRegex}"`).join(', ')}}`,
    by: (...extra) => [...config.aggregationLabels, 'job', ...extra].join(', '),
  };
}
