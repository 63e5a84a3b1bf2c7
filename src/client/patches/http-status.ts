/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** HTTP status carried by the SDK's errors: `code` in 1.x (StreamableHTTPError), `status` in 2.x (SdkHttpError). */
export function httpStatusOf(error: unknown): number | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const e = error as { status?: unknown; code?: unknown; data?: { status?: unknown } };
  for (const v of [e.status, e.data?.status, e.code]) {
    if (typeof v === 'number' && v >= 100 && v <= 599) return v;
  }
  return undefined;
}
