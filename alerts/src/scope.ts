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

/** 0.005, 0.072 without binary noise (1 - 0.995 is 0.0050000000000000044). */
export const tidy = (n: number) => Number(n.toPrecision(10));
export const percent = (share: number) => `${tidy(share * 100)}%`;

const UNIT_WORDS: Record<string, string> = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' };
/** 1h -> "hour", 6h -> "6 hours": reads as "in the last hour", "in the last 6 hours". */
export function windowWords(duration: string): string {
  const m = /^(\d+)([smhdw])$/.exec(duration);
  if (!m) throw new Error(`bad window ${duration}`);
  const unit = UNIT_WORDS[m[2] as string] as string;
  return m[1] === '1' ? unit : `${m[1]} ${unit}s`;
}
