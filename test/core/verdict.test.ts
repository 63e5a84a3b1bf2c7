/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { describe, expect, test, vi } from 'vitest';
import {
  CURSORLESS_GAP_LIMIT,
  type EventIdCodec,
  FORK_REASONS,
  decideCursorlessFirstFrame,
  decideFirstFrame,
  hexSequenceCodec,
  integerCodec,
  mcpProxyCodec,
  opaqueCodec,
  sdkCodec,
} from '../../src/core';

const UUID = '550e8400-e29b-41d4-a716-446655440000';
const OTHER_UUID = '6ba7b810-9dad-11d1-80b4-00c04fd430c8';
const never = () => false;

function decide(
  cursor: string,
  firstId: string | undefined,
  extra: { codec?: EventIdCodec; consumed?: string[]; seenDense?: boolean } = {},
) {
  const consumed = new Set(extra.consumed ?? []);
  return decideFirstFrame({
    cursor,
    firstId,
    codec: extra.codec,
    wasConsumed: id => consumed.has(id),
    // The session's live streams were seen to step by one, unless a test says otherwise (core/density.ts).
    sequenceSeenDense: extra.seenDense ?? true,
  });
}

describe('the textbook fork', () => {
  test('cursor 4821 answered with event 1 is a fork: id_regressed', () => {
    expect(decide('4821', '1')).toEqual({ verdict: 'forked', reason: 'id_regressed', codec: 'integer' });
  });
});

describe('id_missing', () => {
  test('a first frame without an id line', () => {
    expect(decide('4821', undefined)).toEqual({ verdict: 'forked', reason: 'id_missing' });
  });

  test('a first frame with an explicit empty id', () => {
    expect(decide('4821', '')).toEqual({ verdict: 'forked', reason: 'id_missing' });
  });

  test('is decided before anything else, even with opaque ids', () => {
    expect(decide(UUID, undefined)).toEqual({ verdict: 'forked', reason: 'id_missing' });
  });
});

describe('id_reused', () => {
  test('the first id repeats the cursor', () => {
    expect(decide('4821', '4821')).toEqual({ verdict: 'forked', reason: 'id_reused' });
    expect(decide(UUID, UUID)).toEqual({ verdict: 'forked', reason: 'id_reused' });
  });

  test('the first id was already consumed on some stream of the session', () => {
    // 4900 is after the cursor, so only the consumed set can tell it is a replay.
    expect(decide('4821', '4900', { consumed: ['4900'] })).toEqual({
      verdict: 'forked',
      reason: 'id_reused',
      codec: 'integer',
    });
    // Opaque ids: the consumed set is the only evidence there is.
    expect(decide(UUID, OTHER_UUID, { consumed: [OTHER_UUID] })).toEqual({ verdict: 'forked', reason: 'id_reused' });
  });

  test('a restarted sequence is diagnosed as such even when its ids were consumed long ago', () => {
    expect(decide('4821', '1', { consumed: ['1'] })).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
    expect(decide('abc:00ff', 'xyz:0001', { consumed: ['xyz:0001'] })).toMatchObject({ reason: 'stream_changed' });
  });

  test('wasConsumed is asked about the first id, not the cursor', () => {
    const asked: string[] = [];
    decideFirstFrame({
      cursor: '1',
      firstId: '2',
      wasConsumed: id => {
        asked.push(id);
        return false;
      },
    });
    expect(asked).toEqual(['2']);
  });
});

describe('stream_changed', () => {
  test('sdk ids of another stream', () => {
    expect(decide(`${UUID}_1732000000000_ab12cd34`, `${OTHER_UUID}_1732000000500_zz12cd34`)).toEqual({
      verdict: 'forked',
      reason: 'stream_changed',
      codec: 'sdk',
    });
  });

  test('the standalone GET stream is not a request stream', () => {
    expect(decide('_GET_stream_1732000000000_ab12cd34', `${UUID}_1732000000001_ab12cd35`)).toMatchObject({
      verdict: 'forked',
      reason: 'stream_changed',
    });
  });

  test('hex-sequence ids of another stream, even with a later sequence', () => {
    expect(decide('abc:0000000000000005', 'xyz:0000000000000006')).toMatchObject({
      verdict: 'forked',
      reason: 'stream_changed',
    });
  });

  test('mcp-proxy ids of another stream', () => {
    expect(decide(`${UUID}_1732000000000_0001_abc`, `${OTHER_UUID}_1732000000001_0002_abd`)).toMatchObject({
      verdict: 'forked',
      reason: 'stream_changed',
      codec: 'mcp-proxy',
    });
  });

  test.each([
    ['4821', OTHER_UUID, 'integer'],
    [`${UUID}_1732000000000_ab12cd34`, '4822', 'sdk'],
    ['abc:00000000000000ff', 'abc-0100', 'hex-sequence'],
    [`${UUID}_1732000000000_0001_abc`, `${UUID}_1732000000001_ab12cd34`, 'mcp-proxy'],
  ])('cursor %j in a codec format, first id %j not in it', (cursor, firstId, codec) => {
    expect(decide(cursor, firstId)).toEqual({ verdict: 'forked', reason: 'stream_changed', codec });
  });

  test('an explicit codec that does not understand the first id', () => {
    expect(decide('4821', 'x4822', { codec: integerCodec })).toMatchObject({ reason: 'stream_changed' });
  });
});

describe('id_regressed', () => {
  test('a sequence before the cursor', () => {
    expect(decide('100', '99')).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
    expect(decide('100', '0')).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
  });

  test('a per-stream hex sequence that restarted', () => {
    expect(decide('abc:00000000000000ff', 'abc:0000000000000001')).toEqual({
      verdict: 'forked',
      reason: 'id_regressed',
      codec: 'hex-sequence',
    });
  });

  test('an equal sequence written differently', () => {
    expect(decide('abc:00000000000000ff', 'abc:FF')).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
  });
});

describe('resumed', () => {
  test('a contiguous dense sequence skips nothing', () => {
    expect(decide('5', '6')).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      skippedEvents: 0,
      codec: 'integer',
    });
  });

  test('a gap in a sequence not yet seen dense counts nothing: a global counter writes the same integers', () => {
    expect(decide('5', '9', { seenDense: false })).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      codec: 'integer',
    });
    expect(decide('abc:ff', 'abc:1ff', { seenDense: false })).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      codec: 'hex-sequence',
    });
    // Order is still judged without density: a regression forks either way.
    expect(decide('9', '5', { seenDense: false })).toMatchObject({ verdict: 'forked', reason: 'id_regressed' });
  });

  test('a gap in a dense sequence counts the skipped events', () => {
    expect(decide('5', '9')).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      skippedEvents: 3,
      codec: 'integer',
    });
  });

  test('a hex sequence continues on the same stream', () => {
    expect(decide('abc:00000000000000ff', 'abc:0000000000000100')).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      skippedEvents: 0,
      codec: 'hex-sequence',
    });
  });

  test('sdk ids of the same stream verify the stream, without a skipped count', () => {
    const verdict = decide(`${UUID}_1732000000000_ab12cd34`, `${UUID}_1732000000001_ef56ab78`);
    expect(verdict).toEqual({ verdict: 'resumed', continuityVerified: true, codec: 'sdk' });
  });

  test('opaque ids cannot be verified', () => {
    expect(decide(UUID, OTHER_UUID)).toEqual({ verdict: 'resumed', continuityVerified: false });
  });

  test('an explicit codec that cannot read the cursor leaves continuity unverified', () => {
    expect(decide(UUID, OTHER_UUID, { codec: integerCodec })).toEqual({
      verdict: 'resumed',
      continuityVerified: false,
      codec: 'integer',
    });
    expect(decide('4821', '1', { codec: opaqueCodec })).toEqual({
      verdict: 'resumed',
      continuityVerified: false,
      codec: 'opaque',
    });
  });
});

describe('clocks are hints, never evidence of a fork', () => {
  test('sdk ids whose clock went backwards: resumed, flagged clockRegressed', () => {
    expect(decide(`${UUID}_1732000000000_ab12cd34`, `${UUID}_1731999999000_ef56ab78`)).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      clockRegressed: true,
      codec: 'sdk',
    });
  });

  test('mcp-proxy ids whose clock went backwards: resumed, flagged clockRegressed', () => {
    expect(decide(`${UUID}_1732000000000_0009_abc`, `${UUID}_1731000000000_000a_abd`)).toMatchObject({
      verdict: 'resumed',
      clockRegressed: true,
    });
  });

  test('an equal clock is not a regression', () => {
    const verdict = decide(`${UUID}_1732000000000_ab12cd34`, `${UUID}_1732000000000_ef56ab78`);
    expect(verdict).toEqual({ verdict: 'resumed', continuityVerified: true, codec: 'sdk' });
  });

  test('a sequence that advances while its clock goes back is resumed', () => {
    const clocked: EventIdCodec = {
      name: 'clocked',
      decode: id => {
        const [seq, ms] = id.split('@').map(Number);
        return { sequence: seq, dense: true, timeMs: ms };
      },
    };
    expect(decide('10@2000', '11@1000', { codec: clocked })).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      skippedEvents: 0,
      clockRegressed: true,
      codec: 'clocked',
    });
  });
});

describe('user codecs', () => {
  test('a throwing codec on the cursor leaves continuity unverified', () => {
    const throwing: EventIdCodec = {
      name: 'throwing',
      decode() {
        throw new Error('boom');
      },
    };
    expect(decide('a', 'b', { codec: throwing })).toEqual({
      verdict: 'resumed',
      continuityVerified: false,
      codec: 'throwing',
    });
  });

  test('non-finite or non-numeric sequences are ignored', () => {
    const weird: EventIdCodec = {
      name: 'weird',
      decode: id => ({ sequence: id === 'a' ? Number.NaN : ('7' as unknown as number) }),
    };
    expect(decide('a', 'b', { codec: weird })).toEqual({
      verdict: 'resumed',
      continuityVerified: false,
      codec: 'weird',
    });
  });

  test('a sparse sequence verifies order without counting skipped events', () => {
    const sparse: EventIdCodec = { name: 'sparse', decode: id => ({ sequence: Number(id) }) };
    expect(decide('10', '50', { codec: sparse })).toEqual({
      verdict: 'resumed',
      continuityVerified: true,
      codec: 'sparse',
    });
    expect(decide('10', '5', { codec: sparse })).toMatchObject({ reason: 'id_regressed' });
  });

  test('a user codec named auto means detection from the cursor', () => {
    const auto: EventIdCodec = { name: 'auto', decode: () => undefined };
    expect(decide('4821', '1', { codec: auto })).toMatchObject({ reason: 'id_regressed', codec: 'integer' });
  });

  test('every explicit built-in codec decides the textbook case the same way', () => {
    expect(decide('4821', '1', { codec: integerCodec })).toMatchObject({ reason: 'id_regressed' });
    expect(decide('abc:ff', 'abc:1', { codec: hexSequenceCodec })).toMatchObject({ reason: 'id_regressed' });
    expect(
      decide(`${UUID}_1732000000000_ab12cd34`, `${OTHER_UUID}_1732000000000_ab12cd34`, { codec: sdkCodec }),
    ).toMatchObject({
      reason: 'stream_changed',
    });
    expect(decide(`${UUID}_1732000000000_0001_abc`, '1', { codec: mcpProxyCodec })).toMatchObject({
      reason: 'stream_changed',
    });
  });
});

describe('verdict shape', () => {
  test('every fork reason the verdict can produce is listed', () => {
    const produced = [decide('1', undefined), decide('1', '1'), decide('1', 'x'), decide('2', '1')].map(v =>
      v.verdict === 'forked' ? v.reason : undefined,
    );
    for (const reason of produced) expect(FORK_REASONS).toContain(reason);
  });

  test('pure: the verdict depends on the input alone: not on the clock, earlier calls, or a change to the input', () => {
    // SDK ids embed wall-clock ms: a verdict that read the clock, or kept state, would change between these calls.
    const input = Object.freeze({
      cursor: 's_1700000000000_aaaa',
      firstId: 's_1700000000005_bbbb',
      wasConsumed: never,
    });
    vi.useFakeTimers({ now: 1_700_000_000_010 });
    try {
      const first = decideFirstFrame(input);
      expect(first).toMatchObject({ verdict: 'resumed' });
      for (const [cursor, firstId] of [
        ['4821', '1'],
        ['s_1700000000000_aaaa', 't_1700000000001_cccc'],
        ['7', undefined],
      ] as const) {
        decideFirstFrame({ cursor, firstId, wasConsumed: () => true });
      }
      vi.setSystemTime(1_900_000_000_000); // years later
      expect(decideFirstFrame(input)).toEqual(first);
      vi.setSystemTime(1_000_000_000_000); // before the ids were written
      expect(decideFirstFrame(input)).toEqual(first);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('shared stream keys', () => {
  test("a match on the SDK's standalone stream key, shared by every session, does not verify continuity", () => {
    const verdict = decideFirstFrame({
      cursor: '_GET_stream_1732000000000_aaaaaaaa',
      firstId: '_GET_stream_1732000000100_bbbbbbbb',
      wasConsumed: () => false,
    });
    expect(verdict).toMatchObject({ verdict: 'resumed', continuityVerified: false, codec: 'sdk' });
  });
  test('a match on a per-stream key (a UUID) does', () => {
    const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const verdict = decideFirstFrame({
      cursor: `${uuid}_1732000000000_aaaaaaaa`,
      firstId: `${uuid}_1732000000100_bbbbbbbb`,
      wasConsumed: () => false,
    });
    expect(verdict).toMatchObject({ verdict: 'resumed', continuityVerified: true });
  });
});

describe('a reconnect without the cursor is judged against the cursor it dropped (issue 45)', () => {
  const cursorless = (
    cursor: string,
    firstId: string | undefined,
    extra: { codec?: EventIdCodec; consumed?: string[]; seenDense?: boolean } = {},
  ) => {
    const consumed = new Set(extra.consumed ?? []);
    return decideCursorlessFirstFrame({
      cursor,
      firstId,
      codec: extra.codec,
      wasConsumed: id => consumed.has(id),
      sequenceSeenDense: extra.seenDense,
    });
  };
  const oneByOne = ['1', '2', '3', '4', '5'];

  test('integer ids learned dense, cursor 5, first id 13: proven loss of 7', () => {
    expect(cursorless('5', '13', { consumed: oneByOne, seenDense: true })).toEqual({
      verdict: 'forked',
      reason: 'cursor_dropped',
      skippedEvents: 7,
      codec: 'integer',
    });
  });

  test('the next id after the cursor: proven continuity', () => {
    expect(cursorless('5', '6', { consumed: oneByOne, seenDense: true })).toMatchObject({
      verdict: 'resumed',
      continuityVerified: true,
      skippedEvents: 0,
    });
  });

  test("a counter shared by the session's streams (deploy's Redis INCR): ids in the gap the POST streams consumed are not lost", () => {
    // GET stream 1..5, then a POST stream's priming event 6 and its result 10 around notifications 7..9 on the
    // next GET stream: a lossless gap skips 6.
    expect(cursorless('5', '7', { consumed: [...oneByOne, '6'], seenDense: true })).toMatchObject({
      verdict: 'resumed',
      skippedEvents: 0,
    });
    // Only the ids nobody consumed count.
    expect(cursorless('5', '13', { consumed: [...oneByOne, '6', '9'], seenDense: true })).toMatchObject({
      verdict: 'forked',
      skippedEvents: 5,
    });
  });

  test('a numbering not learned dense, and SDK ids, stay exposure', () => {
    expect(cursorless('5', '13', { consumed: oneByOne })).toEqual({ verdict: 'exposed', codec: 'integer' });
    expect(cursorless('_GET_stream_1732000000000_abcd1234', '_GET_stream_1732000005000_zyxw9876')).toEqual({
      verdict: 'exposed',
      codec: 'sdk',
    });
  });

  test('a regression, a reused id or a foreign stream is a fork', () => {
    expect(cursorless('5', '1', { consumed: oneByOne, seenDense: true })).toMatchObject({
      verdict: 'forked',
      reason: 'id_regressed',
    });
    expect(cursorless('s1:0000000000000005', 's2:0000000000000009')).toMatchObject({
      verdict: 'forked',
      reason: 'stream_changed',
    });
    expect(cursorless('5', '5')).toMatchObject({ verdict: 'forked', reason: 'id_reused' });
  });

  test('a per-stream counter with a stream key counts its gap as it stands; a gap too wide to walk is exposure', () => {
    expect(cursorless('s1:0000000000000005', 's1:0000000000000009', { seenDense: true })).toMatchObject({
      verdict: 'forked',
      skippedEvents: 3,
    });
    expect(cursorless('5', String(5 + CURSORLESS_GAP_LIMIT + 2), { seenDense: true })).toMatchObject({
      verdict: 'exposed',
    });
  });
});
