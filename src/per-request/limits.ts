/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The `perRequest` config, checked by the one number guard: a bad value gets a warning and the default. */
import { atLeast, positiveWhole } from '../core/numbers';
import { DEFAULT_MAX_TRACKED, DEFAULT_REISSUE_WINDOW_MS, type PerRequestLimits } from './server-observer';

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
