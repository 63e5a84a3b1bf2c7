/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The fleet delivery marks' rules table (src/core/fleet-delivery-rules.ts, issue 49): every row names tests that
 * exist here, and each trigger claims what its row says.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import {
  FLEET_DELIVERY_RULES,
  type FleetDeliveryTrigger,
  fleetClaimFor,
  requestClaimDue,
} from '../../src/core/fleet-delivery-rules';

const own = readFileSync(__filename, 'utf8');

describe('fleet delivery rules', () => {
  test.each(FLEET_DELIVERY_RULES.map(rule => [rule.says, rule] as const))('%s: names tests that exist', (_s, rule) => {
    expect(rule.tests.length).toBeGreaterThan(0);
    for (const title of rule.tests) expect(own).toContain(`test('${title}'`);
  });

  test('every trigger has exactly one row', () => {
    const triggers: FleetDeliveryTrigger[] = ['resume_get', 'fresh_get', 'delete', 'request', 'closed'];
    for (const t of triggers) expect(FLEET_DELIVERY_RULES.filter(r => r.trigger === t)).toHaveLength(1);
  });

  test('a resume claims nothing', () => {
    expect(fleetClaimFor('resume_get', 10_000, 1000)).toBeUndefined();
  });

  test('a cursor-less GET claims the standalone events stored before it', () => {
    expect(fleetClaimFor('fresh_get', 10_000, 1000)).toEqual({
      reason: 'fresh_stream',
      storedBefore: 10_000,
      standaloneOnly: true,
    });
  });

  test('a DELETE claims every undelivered event of the session', () => {
    expect(fleetClaimFor('delete', 10_000, 1000)).toEqual({
      reason: 'session_deleted',
      storedBefore: 10_000,
      standaloneOnly: false,
    });
  });

  test('a request claims only the events stored a window before it', () => {
    expect(fleetClaimFor('request', 10_000, 1000)).toEqual({
      reason: 'overdue',
      storedBefore: 9000,
      standaloneOnly: false,
    });
  });

  test('requests claim at most every quarter window', () => {
    expect(requestClaimDue(undefined, 0, 1000)).toBe(true);
    expect(requestClaimDue(0, 249, 1000)).toBe(false);
    expect(requestClaimDue(0, 250, 1000)).toBe(true);
    // never busier than every 20 ms, whatever the window
    expect(requestClaimDue(0, 19, 0)).toBe(false);
  });

  test('a close() claims nothing', () => {
    expect(fleetClaimFor('closed', 10_000, 1000)).toBeUndefined();
  });
});
