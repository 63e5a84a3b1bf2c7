/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Durations and numbers as the rules and their descriptions write them. */

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
const UNIT_WORDS: Record<string, string> = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' };
const DURATION = /^(\d+)([smhdw])$/;

export const isDuration = (value: unknown): boolean => typeof value === 'string' && DURATION.test(value);

export function seconds(duration: string): number {
  const m = DURATION.exec(duration);
  if (!m) throw new Error(`windows are one number and unit (5m, 1h, 3d), not ${duration}`);
  return Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
}

/** 1h -> "hour", 6h -> "6 hours": reads as "in the last hour", "in the last 6 hours". */
export function windowWords(duration: string): string {
  const m = DURATION.exec(duration);
  if (!m) throw new Error(`bad window ${duration}`);
  const unit = UNIT_WORDS[m[2] as string] as string;
  return m[1] === '1' ? unit : `${m[1]} ${unit}s`;
}

/** 0.005, 0.072 without binary noise (1 - 0.995 is 0.0050000000000000044). */
export const tidy = (n: number) => Number(n.toPrecision(10));
export const percent = (share: number) => `${tidy(share * 100)}%`;
