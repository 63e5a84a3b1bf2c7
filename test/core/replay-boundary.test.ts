/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { describe, expect, test } from 'vitest';
import {
  CompletedStreams,
  EventOwnerTable,
  OutstandingRequests,
  hashEventId,
  isJsonRpcResponse,
  judgeReplayBoundary,
} from '../../src/core';

const base = {
  streamId: '_GET_stream',
  standaloneStreamId: '_GET_stream',
  foreignEvents: 0,
  streamCompletedHere: false,
  streamInFlight: false,
};

describe('judgeReplayBoundary', () => {
  test.each([
    ['a replay of the own standalone stream', base, undefined],
    ['one event stored here for another session', { ...base, foreignEvents: 1 }, 'cross_session'],
    [
      'another session first, whatever the stream',
      { ...base, foreignEvents: 2, streamId: 'req-1', streamCompletedHere: true },
      'cross_session',
    ],
    ['a request stream completed here', { ...base, streamId: 'req-1', streamCompletedHere: true }, 'completed_stream'],
    [
      'a completed stream with another request still in flight on it (a batch)',
      { ...base, streamId: 'req-1', streamCompletedHere: true, streamInFlight: true },
      undefined,
    ],
    ['a request stream still running here (a healthy resume)', { ...base, streamId: 'req-1' }, undefined],
    ['the standalone stream is never "completed"', { ...base, streamCompletedHere: true }, undefined],
    ['no stream resolved', { ...base, streamId: '', streamCompletedHere: true }, undefined],
    ['a store that answered nothing usable', { ...base, streamId: undefined }, undefined],
  ] as const)('%s', (_, input, expected) => {
    expect(judgeReplayBoundary(input)).toBe(expected);
  });
});

describe('EventOwnerTable', () => {
  test('knows who stored an event, and forgets nothing it was not told', () => {
    const table = new EventOwnerTable(64);
    expect(table.allocated).toBe(false);
    expect(table.ownerOf(hashEventId('x'))).toBe(0);
    table.record(hashEventId('_GET_stream_1_a'), 1);
    table.record(hashEventId('_GET_stream_1_b'), 2);
    expect(table.allocated).toBe(true);
    expect(table.ownerOf(hashEventId('_GET_stream_1_a'))).toBe(1);
    expect(table.ownerOf(hashEventId('_GET_stream_1_b'))).toBe(2);
    expect(table.ownerOf(hashEventId('_GET_stream_1_c'))).toBe(0);
  });

  test('a slot taken by a later event is a miss for the earlier one, never a wrong owner', () => {
    const table = new EventOwnerTable(4);
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    ids.forEach((id, i) => {
      table.record(hashEventId(id), (i % 7) + 1);
    });
    let known = 0;
    ids.forEach((id, i) => {
      const owner = table.ownerOf(hashEventId(id));
      if (owner !== 0) {
        known++;
        expect(owner).toBe((i % 7) + 1);
      }
    });
    // Four slots: at most four ids are still known.
    expect(known).toBeGreaterThan(0);
    expect(known).toBeLessThanOrEqual(4);
  });

  test('clear() forgets everything', () => {
    const table = new EventOwnerTable(8);
    table.record(hashEventId('a'), 3);
    table.clear();
    expect(table.ownerOf(hashEventId('a'))).toBe(0);
  });
});

describe('CompletedStreams', () => {
  test('keeps the most recent streams only', () => {
    const streams = new CompletedStreams(2);
    streams.add('a');
    streams.add('b');
    streams.add('a'); // already there: does not push b out
    expect(streams.has('a') && streams.has('b')).toBe(true);
    streams.add('c');
    expect(streams.has('c')).toBe(true);
    expect(streams.has('a')).toBe(false);
  });
});

describe('isJsonRpcResponse', () => {
  test.each([
    [{ jsonrpc: '2.0', id: 1, result: {} }, true],
    [{ jsonrpc: '2.0', id: 'x', error: { code: 1 } }, true],
    [{ jsonrpc: '2.0', method: 'notifications/message' }, false],
    [{ jsonrpc: '2.0', id: 1, method: 'elicitation/create' }, false],
    [{}, false],
    [null, false],
    ['{"id":1,"result":{}}', false],
  ])('%j → %s', (message, expected) => {
    expect(isJsonRpcResponse(message)).toBe(expected);
  });
});

describe('OutstandingRequests', () => {
  test('a response to a request never sent, or answered already, is foreign', () => {
    const book = new OutstandingRequests();
    book.sent(1);
    book.sent('a');
    expect(book.answered(1)).toBe(false);
    expect(book.answered(1)).toBe(true); // answered already
    expect(book.answered(7)).toBe(true); // never sent
    expect(book.answered('a')).toBe(false);
    expect(book.answered(null)).toBe(false); // an error response to an unparseable request names no id
  });

  test('after it had to forget requests, unknown ids are not judged', () => {
    const book = new OutstandingRequests(2);
    book.sent(1);
    book.sent(2);
    book.sent(3); // forgets 1
    expect(book.answered(1)).toBe(false);
    expect(book.answered(99)).toBe(false);
    expect(book.answered(3)).toBe(false);
  });

  test('remembers the last 16 requests answered, oldest forgotten first', () => {
    const book = new OutstandingRequests();
    for (let id = 1; id <= 17; id++) {
      book.sent(id);
      book.answered(id);
      expect(book.wasAnswered(id)).toBe(true);
    }
    expect(book.wasAnswered(1)).toBe(false); // the 17th pushed the first out
    expect(book.wasAnswered(2)).toBe(true);
    book.sent(18);
    book.answered(18);
    expect(book.wasAnswered(2)).toBe(false);
    expect(book.wasAnswered(3) && book.wasAnswered(18)).toBe(true);
    expect(book.wasAnswered(99)).toBe(false);
  });
});
