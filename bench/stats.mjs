/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Order statistics for the benchmark's per-round samples.

export function quantile(values, q) {
  const s = values.filter(v => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

/** Median, quartiles and range of a sample. */
export function summarize(values) {
  const finite = values.filter(v => Number.isFinite(v));
  return {
    n: finite.length,
    median: quantile(finite, 0.5),
    p25: quantile(finite, 0.25),
    p75: quantile(finite, 0.75),
    min: finite.length ? Math.min(...finite) : NaN,
    max: finite.length ? Math.max(...finite) : NaN,
  };
}
