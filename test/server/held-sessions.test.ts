/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * tmcp's held session ids (server/stacks/tmcp/held-sessions.ts) are bounded in bytes, not only in count: an id past
 * MAX_HELD_SESSION_ID_CHARS is held as its digest. Measured on a real tmcp HttpTransport under forkwatch/register
 * (bench/held-session-ids.mjs, a child per run with --expose-gc): 3,000 GETs with 12,000-character ids. Before the
 * digest the instrumented run kept about 34 MB more heap than bare; now under 1 MB.
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { runHeldIds } from '../../bench/held-session-ids.mjs';
import { MAX_HELD_SESSION_ID_CHARS } from '../../src/core/defaults';
import { HeldSessions } from '../../src/server/stacks/tmcp/held-sessions';

const ROOT = join(__dirname, '../..');

describe('HeldSessions', () => {
  test('a short id is held as itself; a long one by digest, found, told apart from its neighbours and released', () => {
    const held = new HeldSessions();
    const long = 'a'.repeat(MAX_HELD_SESSION_ID_CHARS * 40);
    const neighbour = `${'a'.repeat(MAX_HELD_SESSION_ID_CHARS * 40 - 1)}b`;
    held.hold('2f6c1a9e-4b7d-4c1e-9f3a-8d2b5e7c0a14');
    held.hold(long);
    expect(held.has('2f6c1a9e-4b7d-4c1e-9f3a-8d2b5e7c0a14')).toBe(true);
    expect(held.has(long)).toBe(true);
    expect(held.has(neighbour)).toBe(false);
    expect(held.has(long.slice(0, MAX_HELD_SESSION_ID_CHARS))).toBe(false);
    held.release(long);
    expect(held.has(long)).toBe(false);
    expect(held.size).toBe(1);
  });

  test('bounded in count: the oldest id goes first', () => {
    const held = new HeldSessions(2);
    for (const id of ['a', 'b', 'c']) held.hold(id);
    expect([held.has('a'), held.has('b'), held.has('c')]).toEqual([false, true, true]);
    expect(held.size).toBe(2);
  });

  test('holding an id it holds changes nothing: no id forgotten for it, and its age stays its first hold', () => {
    const held = new HeldSessions(2);
    held.hold('a');
    held.hold('b');
    // Every answer to a live session holds its id again: at the bound, that must not push another id out.
    held.hold('a');
    expect([held.has('a'), held.has('b'), held.size]).toEqual([true, true, 2]);
    held.hold('c');
    expect([held.has('a'), held.has('b'), held.has('c')]).toEqual([false, true, true]);
  });

  test('a released id frees its place: the others stay', () => {
    const held = new HeldSessions(2);
    held.hold('a');
    held.hold('b');
    held.release('a');
    held.release('never-held');
    held.hold('c');
    expect([held.has('a'), held.has('b'), held.has('c'), held.size]).toEqual([false, true, true, 2]);
  });
});

test('3,000 GETs with 12,000-character session ids add under 5 MB of heap over bare (real tmcp, register)', () => {
  const bare = runHeldIds(process.execPath);
  const instrumented = runHeldIds(process.execPath, join(ROOT, 'build/src/register.js'));
  expect(bare.patched).toBe(false);
  expect(instrumented.patched).toBe(true);
  // tmcp answers every one of them with a fresh stream: each id was a session the transport answered as live.
  expect(instrumented.statuses).toEqual({ 200: 3000 });
  expect(instrumented.heapAddedMB - bare.heapAddedMB).toBeLessThan(5);
}, 240_000);
