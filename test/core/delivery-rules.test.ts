/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The delivery ledger's rules table (src/core/delivery-rules.ts): every row names tests that exist, and the pure
 * judgement answers each trigger the way the rows say.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { DELIVERY_RULES, type DeliveryTrigger, judgePendingStream } from '../../src/core/delivery-rules';

const ledgerTests = readFileSync(join(__dirname, 'delivery-ledger.test.ts'), 'utf8');
const due = { replayable: true, standalone: false, dueAt: 100, behindReplay: false };
const listened = { listenerSeen: true };

describe('delivery rules', () => {
  test.each(DELIVERY_RULES.map(rule => [rule.says, rule] as const))('%s: names tests that exist', (_says, rule) => {
    expect(rule.tests.length).toBeGreaterThan(0);
    for (const title of rule.tests) expect(ledgerTests).toContain(`test('${title}'`);
  });

  test('the last row applies to everything: the table always decides', () => {
    const last = DELIVERY_RULES[DELIVERY_RULES.length - 1]!;
    expect(last.applies(due, listened, 0, 'request')).toBe(true);
  });

  test.each<[DeliveryTrigger, number, ReturnType<typeof judgePendingStream>]>([
    ['request', 99, undefined],
    ['request', 100, 'stream_moved'],
    ['live_write', 100, 'stream_moved'],
    ['get', 1000, undefined],
    ['closed', 0, 'abandoned'],
    ['expired', 1000, 'abandoned'],
    ['evicted', 0, 'abandoned'],
    ['replaced', 1000, 'abandoned'],
  ])('a due-at-100 stream on %s at %d: %s', (trigger, now, reason) => {
    expect(judgePendingStream(due, listened, now, trigger)).toBe(reason);
  });

  test('loss reasons once due after a request: dropped without a store, no_listener without a GET here', () => {
    expect(judgePendingStream({ ...due, replayable: false }, listened, 100, 'request')).toBe('dropped');
    expect(judgePendingStream({ ...due, standalone: true }, { listenerSeen: false }, 100, 'request')).toBe(
      'no_listener',
    );
    expect(judgePendingStream({ ...due, standalone: true }, listened, 100, 'request')).toBe('stream_moved');
    expect(judgePendingStream({ ...due, dueAt: undefined }, listened, 1e9, 'request')).toBeUndefined();
  });

  test('behind a replay that missed them: never judged on activity, abandoned when the session ends', () => {
    const behind = { ...due, behindReplay: true };
    for (const trigger of ['request', 'live_write', 'get'] as const)
      expect(judgePendingStream(behind, listened, 1e9, trigger), trigger).toBeUndefined();
    expect(judgePendingStream(behind, listened, 1e9, 'closed')).toBe('abandoned');
  });
});
