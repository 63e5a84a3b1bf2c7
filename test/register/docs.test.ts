/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The production-install documentation (docs/production.md, merged into the README as "## Production install")
 * agrees with env-config.ts: every FORKWATCH_* variable, and nothing else, with the defaults the code uses.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { DEFAULT_LEDGER_LIMITS } from '../../src/core/ledger';
import { DEFAULT_DELIVERY_WINDOW_MS } from '../../src/core/delivery-ledger';
import { DEFAULT_PROMETHEUS_PORT, DEFAULT_VERDICT_TIMEOUT_MS, FORKWATCH_ENV } from '../../src/lifecycle/env-config';
import { ROOT } from './support';

/** Every document that holds the section (the README once merged, and docs/production.md while it exists). */
const documents = ['README.md', 'docs/production.md']
  .map(file => join(ROOT, file))
  .filter(existsSync)
  .map(path => ({ path, text: readFileSync(path, 'utf8') }))
  .map(({ path, text }) => ({ path, section: text.split(/^## /m).find(s => s.startsWith('Production install')) }))
  .filter((d): d is { path: string; section: string } => d.section !== undefined);

function rows(section: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^\| `([A-Z_]+)` \| `?([^|`]*)`?/.exec(line);
    if (m) out.set(m[1]!, m[2]!.trim());
  }
  return out;
}

const CODE_DEFAULTS: Record<string, string> = {
  [FORKWATCH_ENV.onFork]: 'record',
  [FORKWATCH_ENV.captureEventIds]: 'true',
  [FORKWATCH_ENV.captureRawSessionId]: 'false',
  [FORKWATCH_ENV.codec]: 'auto',
  [FORKWATCH_ENV.verdictTimeoutMs]: String(DEFAULT_VERDICT_TIMEOUT_MS),
  [FORKWATCH_ENV.ledgerMaxSessions]: String(DEFAULT_LEDGER_LIMITS.maxSessions),
  [FORKWATCH_ENV.ledgerMaxIdleMs]: String(DEFAULT_LEDGER_LIMITS.maxIdleMs),
  [FORKWATCH_ENV.ledgerRecentIds]: String(DEFAULT_LEDGER_LIMITS.recentIds),
  [FORKWATCH_ENV.propagateContext]: 'true',
  [FORKWATCH_ENV.deliveryWindowMs]: String(DEFAULT_DELIVERY_WINDOW_MS),
  [FORKWATCH_ENV.startSdk]: 'true',
};

test('the section exists somewhere', () => {
  expect(documents.length).toBeGreaterThan(0);
});

describe.each(documents)('$path', ({ section }) => {
  test('lists exactly the FORKWATCH_* variables of env-config.ts, with the code defaults', () => {
    const table = rows(section);
    const documented = [...table.keys()].filter(k => k.startsWith('FORKWATCH_'));
    expect(documented.sort()).toEqual(Object.values(FORKWATCH_ENV).sort());
    for (const [name, value] of Object.entries(CODE_DEFAULTS)) expect(table.get(name), name).toBe(value);
  });

  test('documents the OTEL_* defaults register applies', () => {
    const table = rows(section);
    expect(table.get('OTEL_METRICS_EXPORTER')).toBe('prometheus');
    expect(table.get('OTEL_EXPORTER_PROMETHEUS_PORT')).toBe(String(DEFAULT_PROMETHEUS_PORT));
    expect(table.get('OTEL_LOG_LEVEL')).toBe('warn');
    expect(table.get('OTEL_SDK_DISABLED')).toBe('false');
    expect(section).toContain('node --require forkwatch/register');
    expect(section).toContain('node --import forkwatch/register');
    expect(section).toContain('NODE_OPTIONS');
  });
});
