/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import type { Span } from '@opentelemetry/api';

const MAX_MESSAGE_LENGTH = 256;

/** The error type forkwatch records as `error.type`. */
export function errorTypeOf(error: unknown): string {
  return error instanceof Error ? error.name || 'Error' : typeof error;
}

/**
 * Records an exception with its type and a bounded message only: a resume that fails is routine on a flaky network,
 * and a stack trace per failure is neither needed nor bounded.
 */
export function recordBoundedException(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  span.recordException({ name: errorTypeOf(error), message: message.slice(0, MAX_MESSAGE_LENGTH) });
}
