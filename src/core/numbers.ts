/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The one number guard of forkwatch's settings and options: a finite number, and the ranges built on it. */

export function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** `value` when it is a finite number of at least `min`, else undefined. */
export function atLeast(value: unknown, min: number): number | undefined {
  return isFiniteNumber(value) && value >= min ? value : undefined;
}

/** `value` when it is a finite number above 0, else undefined. */
export function positive(value: unknown): number | undefined {
  return isFiniteNumber(value) && value > 0 ? value : undefined;
}

/** `value` rounded down when it is a finite number of at least 1, else undefined. */
export function positiveWhole(value: unknown): number | undefined {
  return isFiniteNumber(value) && value >= 1 ? Math.floor(value) : undefined;
}
