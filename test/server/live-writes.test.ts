/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * LiveWrites, the expected writes of one server transport (src/server/stacks/sdk/live-writes.ts), on mappings of the
 * two shapes the SDK keeps: stream id -> ServerResponse (1.24) and stream id -> { controller, encoder } (1.25+, 2.x).
 */
import { describe, expect, test } from 'vitest';
import { LiveWrites } from '../../src/server/stacks/sdk/live-writes';

describe('LiveWrites', () => {
  test('a write finds its stream by the mapped connection, in both shapes', () => {
    const res = {};
    const controller = {};
    const mapping = new Map<string, unknown>([
      ['_GET_stream', res],
      ['request-1', { controller, encoder: {} }],
    ]);
    const writes = new LiveWrites();
    expect(writes.streamOfWrite(mapping, res)).toBe('_GET_stream');
    expect(writes.streamOfWrite(mapping, controller)).toBe('request-1');
    expect(writes.streamOfWrite(mapping, res)).toBe('_GET_stream'); // back from the cache of targets
  });

  test("a replay's connection, not mapped yet, is no live write; once mapped it is", () => {
    const old = { controller: {} };
    const replaying = { controller: {} };
    const mapping = new Map<string, unknown>([['_GET_stream', old]]);
    const writes = new LiveWrites();
    expect(writes.streamOfWrite(mapping, old.controller)).toBe('_GET_stream');
    expect(writes.streamOfWrite(mapping, replaying.controller)).toBeUndefined();
    mapping.set('_GET_stream', replaying); // the SDK maps the resumed stream after its replay
    expect(writes.streamOfWrite(mapping, replaying.controller)).toBe('_GET_stream');
    expect(writes.streamOfWrite(mapping, old.controller)).toBeUndefined(); // the cached target is checked
  });

  test('anything else than a map and a connection object finds nothing and throws nothing', () => {
    const writes = new LiveWrites();
    expect(writes.streamOfWrite(undefined, {})).toBeUndefined();
    expect(writes.streamOfWrite({}, {})).toBeUndefined();
    expect(writes.streamOfWrite(new Map([['s', 'x']]), 'x')).toBeUndefined();
    expect(writes.streamOfWrite(new Map([[1, {}]]), null)).toBeUndefined();
  });

  test('expected writes: counted per stream, written ones taken off, the rest taken once', () => {
    const writes = new LiveWrites();
    for (let i = 0; i < 3; i++) writes.expect('a');
    writes.expect('b');
    writes.written('a');
    writes.written('b');
    writes.written('b'); // a write nobody expected (an event stored before its stream reconnected)
    expect(writes.take('a')).toBe(2);
    expect(writes.take('a')).toBe(0);
    expect(writes.take('b')).toBe(0);
    expect(writes.take('never')).toBe(0);
  });

  test('memory stays bounded over many request streams, and what is still expected survives a while', () => {
    const writes = new LiveWrites();
    writes.expect('kept');
    for (let i = 0; i < 10_000; i++) {
      writes.expect(`request-${i}`);
      writes.written(`request-${i}`);
    }
    expect(writes['others']?.size ?? 0).toBeLessThanOrEqual(1);
    expect(writes.take('kept')).toBe(1);
    for (let i = 0; i < 10_000; i++) writes.expect(`leftover-${i}`); // stores that never resolved, on many streams
    expect(writes['others']!.size).toBeLessThanOrEqual(16);
  });

  test('two streams with stores in flight at once keep their own counts', () => {
    const writes = new LiveWrites();
    writes.expect('a');
    writes.expect('b');
    writes.expect('a');
    writes.expect('b');
    writes.written('a');
    writes.written('b');
    writes.expect('c');
    expect(writes.take('a')).toBe(1);
    expect(writes.take('b')).toBe(1);
    expect(writes.take('c')).toBe(1);
    expect(writes['others']).toBeUndefined();
  });
});
