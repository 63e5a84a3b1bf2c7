/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The replay-boundary watch: owners are sessions, learned only for shared stores (src/server/replay-boundary-watch.ts). */
import { describe, expect, test } from 'vitest';
import { type BoundaryParty, ReplayBoundaryWatch } from '../../src/server/replay-boundary-watch';

/** A transport's party, as its session observer stands for it. */
const transport = (sessionId?: string): BoundaryParty => ({ transport: { sessionId }, boundaryRecord: undefined });

describe('ReplayBoundaryWatch', () => {
  test('a store is shared once a second transport uses it, for both of them', () => {
    const watch = new ReplayBoundaryWatch();
    const store = {};
    const a = transport('A');
    const shareA = watch.shareOf(store, a);
    expect(shareA.shared).toBe(false);
    expect(watch.shareOf(store, a).shared).toBe(false); // the same transport again
    watch.shareOf(store, transport('B'));
    expect(shareA.shared).toBe(true);
    expect(watch.shareOf({}, a).shared).toBe(false); // another store
  });

  test("another session's event is foreign, its own is not, an unknown one is not", () => {
    const watch = new ReplayBoundaryWatch();
    const a = transport('session-a');
    const b = transport('session-b');
    watch.stored(a, '_GET_stream_1_a');
    watch.stored(b, '_GET_stream_1_b');
    expect(watch.foreignOwner(a, '_GET_stream_1_a')).toBeUndefined();
    expect(watch.foreignOwner(a, '_GET_stream_1_b')).toMatchObject({ sessionId: 'session-b' });
    expect(watch.foreignOwner(a, '_GET_stream_2_x')).toBeUndefined();
  });

  test('the same session on a new transport (re-hydrated on this process) still owns its events', () => {
    const watch = new ReplayBoundaryWatch();
    const before = transport('session-a');
    watch.stored(before, 'e1');
    const after = transport('session-a');
    expect(watch.foreignOwner(after, 'e1')).toBeUndefined();
  });

  test('a transport without a session id records nothing and claims nothing', () => {
    const watch = new ReplayBoundaryWatch();
    const stateless = transport(undefined);
    watch.stored(stateless, 'e1');
    expect(watch.foreignOwner(transport('session-a'), 'e1')).toBeUndefined();
    watch.stored(transport('session-a'), 'e2');
    // A resume on a transport with no session yet: any known owner is another session.
    expect(watch.foreignOwner(stateless, 'e2')).toMatchObject({ sessionId: 'session-a' });
  });

  test('completed request streams are per transport', () => {
    const watch = new ReplayBoundaryWatch();
    const a = transport('a');
    watch.responseWritten(a, 'req-1');
    expect(watch.completedHere(a, 'req-1')).toBe(true);
    expect(watch.completedHere(a, 'req-2')).toBe(false);
    expect(watch.completedHere(transport('b'), 'req-1')).toBe(false);
    expect(watch.completedHere(a, undefined)).toBe(false);
  });

  test("a new watch (a re-patched instrumentation) starts afresh: it never reads another watch's record", () => {
    const old = new ReplayBoundaryWatch();
    const a = transport('a');
    old.responseWritten(a, 'req-1');
    const store = {};
    old.shareOf(store, transport('b'));
    const watch = new ReplayBoundaryWatch();
    expect(watch.completedHere(a, 'req-1')).toBe(false);
    // In the new watch, a is a store's first user as much as b was in the old one: not shared.
    expect(watch.shareOf(store, a).shared).toBe(false);
    expect(old.completedHere(a, 'req-1')).toBe(false); // a's record is the new watch's now
  });
});
