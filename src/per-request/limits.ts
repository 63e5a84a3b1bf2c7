/** The `perRequest` config, checked: a bad value gets a diagnostic and the default. */
import { DEFAULT_MAX_TRACKED, DEFAULT_REISSUE_WINDOW_MS, type PerRequestLimits } from './server-observer';

export function resolvePerRequestLimits(
  config: { reissueWindowMs?: unknown; maxTracked?: unknown } | undefined,
  warn: (message: string) => void,
): PerRequestLimits {
  const valid = (value: unknown, min: number): value is number =>
    typeof value === 'number' && Number.isFinite(value) && value >= min;
  const window = config?.reissueWindowMs;
  const max = config?.maxTracked;
  if (window !== undefined && !valid(window, 0))
    warn(`invalid perRequest.reissueWindowMs ${String(window)}; using ${DEFAULT_REISSUE_WINDOW_MS}`);
  if (max !== undefined && !valid(max, 1))
    warn(`invalid perRequest.maxTracked ${String(max)}; using ${DEFAULT_MAX_TRACKED}`);
  return Object.freeze({
    reissueWindowMs: valid(window, 0) ? window : DEFAULT_REISSUE_WINDOW_MS,
    maxTracked: valid(max, 1) ? Math.floor(max) : DEFAULT_MAX_TRACKED,
  });
}
