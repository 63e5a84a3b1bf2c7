/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * lifecycle/held-diagnostics.ts: what forkwatch says before forkwatch/register decided is held, bounded, and handed
 * on in order once released. End to end (an ESM app's nested SDK copy patched before register decides, on a runtime
 * with synchronous loader hooks, and the diagnostic still printed) it runs in test/stacks/servers.test.ts.
 */
import type { DiagLogger } from '@opentelemetry/api';
import { afterEach, expect, test } from 'vitest';
import { HeldDiagLogger, holdDiagnostics, releaseDiagnostics } from '../../src/lifecycle/held-diagnostics';

afterEach(() => releaseDiagnostics());

function recorder() {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (message: string, ...args: unknown[]) =>
      lines.push([level, message, ...args.map(String)].join(' '));
  const logger: DiagLogger = {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    verbose: at('verbose'),
  };
  return { lines, logger };
}

test('not holding: every message goes straight through', () => {
  const { lines, logger } = recorder();
  new HeldDiagLogger(() => logger).debug('patched X', 1);
  expect(lines).toEqual(['debug patched X 1']);
});

test('holding: nothing goes through until released, then all of it, in order and at its level', () => {
  const { lines, logger } = recorder();
  holdDiagnostics();
  const held = new HeldDiagLogger(() => logger);
  held.debug('patched A');
  held.warn('left B alone', 'why');
  expect(lines).toEqual([]);
  releaseDiagnostics();
  expect(lines).toEqual(['debug patched A', 'warn left B alone why']);
  held.info('after');
  expect(lines.at(-1)).toBe('info after');
});

test('bounded: 200 held, the rest counted in one line', () => {
  const { lines, logger } = recorder();
  holdDiagnostics();
  const held = new HeldDiagLogger(() => logger);
  for (let i = 0; i < 250; i++) held.debug(`m${i}`);
  releaseDiagnostics();
  expect(lines).toHaveLength(201);
  expect(lines[199]).toBe('debug m199');
  expect(lines[200]).toBe('warn 50 more diagnostics from start-up were dropped');
});
