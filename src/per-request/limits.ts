/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The `perRequest` config, checked by the one number guard: a bad value gets a warning and the default. */
import { atLeast, positiveWhole } from '../core/numbers';
import type { PerRequestLimits } from '../shared/runtime';

/** Defaults of the `perRequest` config. */
export const DEFAULT_REISSUE_WINDOW_MS = 60_000;
export const DEFAULT_MAX_TRACKED = 10_000;

export function resolvePerRequestLimits(
  config: { reissueWindowMs?: unknown; maxTracked?: unknown } | undefined,
  warnings: string[],
): PerRequestLimits {
  const window = atLeast(config?.reissueWindowMs, 0);
  const max = positiveWhole(config?.maxTracked);
  if (config?.reissueWindowMs !== undefined && window === undefined)
    warnings.push(
      `invalid perRequest.reissueWindowMs ${String(config.reissueWindowMs)}; using ${DEFAULT_REISSUE_WINDOW_MS}`,
    );
  if (config?.maxTracked !== undefined && max === undefined)
    warnings.push(`invalid perRequest.maxTracked ${String(config.maxTracked)}; using ${DEFAULT_MAX_TRACKED}`);
  return Object.freeze({
    reissueWindowMs: window ?? DEFAULT_REISSUE_WINDOW_MS,
    maxTracked: max ?? DEFAULT_MAX_TRACKED,
  });
}
