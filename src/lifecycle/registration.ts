/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The contract between forkwatch/register and forkwatch/prom-client: what register publishes under a global symbol
 * about the instrumentation it runs, so prom-client can find it in any copy of forkwatch. Types only, and a symbol:
 * loading it costs nothing.
 */
import type { MeterProvider as ApiMeterProvider } from '@opentelemetry/api';
import type { MetricReader } from '@opentelemetry/sdk-metrics';
import type { ForkwatchInstrumentation } from './instrumentation';

/** Symbol.for is process-wide, so copies of forkwatch agree on it too. */
export const REGISTRATION_KEY = Symbol.for('forkwatch.register');

/** @internal What forkwatch/register publishes about the instrumentation it runs. */
export interface ForkwatchRegistration {
  /** `pending` until register decided (one tick after it was loaded). */
  readonly mode: 'pending' | 'sdk' | 'app-sdk' | 'disabled' | 'failed';
  readonly instrumentation: ForkwatchInstrumentation | undefined;
  /** Settles once mode is decided. Never rejects. */
  readonly ready: Promise<void>;
  /** Set when register started an SDK with a MeterProvider: a reader in it, kept for prom-client. */
  readonly promClientReader: MetricReader | undefined;
  /** Makes the instrumentation report to this MeterProvider too, whatever register reports to. */
  addMeterProvider(provider: ApiMeterProvider): void;
  /** Flushes and shuts down what register started (idempotent). */
  shutdown(): Promise<void>;
}

export function getRegistration(): ForkwatchRegistration | undefined {
  return (globalThis as Record<symbol, ForkwatchRegistration | undefined>)[REGISTRATION_KEY];
}
