/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The OTEL_* variables register reads itself (register-sdk.ts, register-tracing.ts), by OpenTelemetry's rules. */
import { diag } from '@opentelemetry/api';
import { positive } from '../core/numbers';

/** Reads `name` from the environment the way OpenTelemetry does: trimmed, empty meaning unset. */
export function envString(name: string): string | undefined {
  const value = process.env[name]?.trim();
  return value ? value : undefined;
}

export function envList(name: string): string[] | undefined {
  return envString(name)
    ?.split(',')
    .map(part => part.trim())
    .filter(part => part !== '');
}

/** A positive number from the environment, else undefined (with a warning, as NodeSDK gives). */
export function envPositive(name: string): number | undefined {
  const raw = envString(name);
  if (raw === undefined) return undefined;
  const value = positive(Number(raw));
  if (value !== undefined) return value;
  diag.warn(`${name} (${raw}) is invalid, expected number greater than 0, using default.`);
  return undefined;
}
