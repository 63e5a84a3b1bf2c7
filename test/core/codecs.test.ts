/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { describe, expect, test } from 'vitest';
import {
  BUILTIN_CODEC_NAMES,
  type EventIdCodec,
  autoCodec,
  detectCodec,
  hexSequenceCodec,
  integerCodec,
  isBuiltinCodecName,
  mcpProxyCodec,
  opaqueCodec,
  resolveCodec,
  safeDecode,
  sdkCodec,
} from '../../src/core';

const UUID = '550e8400-e29b-41d4-a716-446655440000';

describe('integer codec', () => {
  test('decodes a plain counter as a dense sequence', () => {
    expect(integerCodec.decode('4821')).toEqual({ sequence: 4821, dense: true });
    expect(integerCodec.decode('0')).toEqual({ sequence: 0, dense: true });
  });

  test('accepts up to 15 digits (always a safe integer)', () => {
    expect(integerCodec.decode('999999999999999')).toEqual({ sequence: 999_999_999_999_999, dense: true });
    expect(integerCodec.decode('9999999999999999')).toBeUndefined();
  });

  test.each(['', '-1', '+1', '01', '1.5', '1e3', ' 1', '1 ', '0x10', 'abc', '١٢'])('rejects %j', id => {
    expect(integerCodec.decode(id)).toBeUndefined();
  });
});

describe('sdk codec (InMemoryEventStore `<streamId>_<ms>_<rand8>`)', () => {
  test('decodes a UUID stream and its timestamp', () => {
    expect(sdkCodec.decode(`${UUID}_1732000000000_ab12cd34`)).toEqual({ stream: UUID, timeMs: 1732000000000 });
  });

  test('keeps the underscores of the standalone GET stream in the stream id', () => {
    expect(sdkCodec.decode('_GET_stream_1732000000000_ab12cd34')).toEqual({
      stream: '_GET_stream',
      sharedStream: true,
      timeMs: 1732000000000,
    });
  });

  test('carries no sequence: ids of one stream cannot be ordered beyond their clock', () => {
    expect(sdkCodec.decode(`${UUID}_1732000000000_ab12cd34`)?.sequence).toBeUndefined();
  });

  test.each([
    UUID,
    '4821',
    `${UUID}_1732000000000`,
    `${UUID}_173200000_ab12cd34`, // 9-digit clock
    `${UUID}_1732000000000_AB12CD34`, // upper case is not base36 from toString(36)
    `_1732000000000_ab12cd34`, // empty stream
    `${UUID}_1732000000000_ab_cd`,
  ])('rejects %j', id => {
    expect(sdkCodec.decode(id)).toBeUndefined();
  });
});

describe('mcp-proxy codec (`<streamId>_<ms>_<counter x4>_<rand x3>`)', () => {
  test('decodes stream and timestamp, not the wrapping counter', () => {
    expect(mcpProxyCodec.decode(`${UUID}_1732000000000_002s_k9x`)).toEqual({ stream: UUID, timeMs: 1732000000000 });
  });

  test('keeps underscores in the stream id', () => {
    expect(mcpProxyCodec.decode('_GET_stream_1732000000000_0001_abc')?.stream).toBe('_GET_stream');
  });

  test('does not claim SDK ids, and the SDK codec does not claim mcp-proxy ids', () => {
    expect(mcpProxyCodec.decode(`${UUID}_1732000000000_ab12cd34`)).toBeUndefined();
    expect(sdkCodec.decode(`${UUID}_1732000000000_0001_abc`)).toBeUndefined();
  });

  test.each([`${UUID}_1732000000000_001_abc`, `${UUID}_1732000000000_0001_ab`, `${UUID}_1732000000000_0001`])(
    'rejects %j',
    id => {
      expect(mcpProxyCodec.decode(id)).toBeUndefined();
    },
  );
});

describe('hex-sequence codec (`<streamId>:<hexseq>`)', () => {
  test('decodes a 16-digit zero-padded counter', () => {
    expect(hexSequenceCodec.decode('abc:000000000000000a')).toEqual({ stream: 'abc', sequence: 10, dense: true });
    expect(hexSequenceCodec.decode('abc:00000000000000ff')).toEqual({ stream: 'abc', sequence: 255, dense: true });
  });

  test('decodes short and upper-case counters', () => {
    expect(hexSequenceCodec.decode('abc:a')).toEqual({ stream: 'abc', sequence: 10, dense: true });
    expect(hexSequenceCodec.decode('abc:FF')).toEqual({ stream: 'abc', sequence: 255, dense: true });
    expect(hexSequenceCodec.decode('abc:0')).toEqual({ stream: 'abc', sequence: 0, dense: true });
  });

  test('splits at the last colon', () => {
    expect(hexSequenceCodec.decode('tenant:abc:0010')?.stream).toBe('tenant:abc');
  });

  test('rejects counters beyond 2^52, which would lose precision', () => {
    expect(hexSequenceCodec.decode('abc:10000000000000')).toBeUndefined();
    expect(hexSequenceCodec.decode('abc:fffffffffffff')?.sequence).toBe(2 ** 52 - 1);
  });

  test.each(['abc', 'abc:', ':00ff', 'abc:xyz', 'abc:0x10', '4821'])('rejects %j', id => {
    expect(hexSequenceCodec.decode(id)).toBeUndefined();
  });
});

describe('opaque ids', () => {
  test.each([UUID, 'e3b0c442-98fc-1c14-9afb-f4c8996fb924', 'Zm9vYmFy', ''])('%j is undecodable by auto', id => {
    expect(autoCodec.decode(id)).toBeUndefined();
    expect(detectCodec(id)).toBeUndefined();
  });

  test('the opaque codec never decodes anything', () => {
    expect(opaqueCodec.decode('4821')).toBeUndefined();
    expect(opaqueCodec.decode(`${UUID}_1732000000000_ab12cd34`)).toBeUndefined();
  });
});

describe('auto detection', () => {
  test.each([
    ['4821', 'integer'],
    [`${UUID}_1732000000000_ab12cd34`, 'sdk'],
    ['_GET_stream_1732000000000_ab12cd34', 'sdk'],
    [`${UUID}_1732000000000_0001_abc`, 'mcp-proxy'],
    ['abc:000000000000000a', 'hex-sequence'],
  ])('%j is detected as %s', (id, name) => {
    expect(detectCodec(id)?.name).toBe(name);
    expect(autoCodec.decode(id)).toEqual(detectCodec(id)!.decode(id));
  });

  test('the auto codec reports its own name', () => {
    expect(autoCodec.name).toBe('auto');
  });
});

describe('resolveCodec', () => {
  test('undefined means auto', () => {
    expect(resolveCodec(undefined)).toBe(autoCodec);
  });

  test('every built-in name resolves to the codec of that name', () => {
    for (const name of BUILTIN_CODEC_NAMES) expect(resolveCodec(name)?.name).toBe(name);
    expect(BUILTIN_CODEC_NAMES).toEqual(
      expect.arrayContaining(['auto', 'integer', 'sdk', 'mcp-proxy', 'hex-sequence', 'opaque']),
    );
  });

  test('a user codec is returned as is', () => {
    const mine: EventIdCodec = { name: 'mine', decode: () => ({ sequence: 1 }) };
    expect(resolveCodec(mine)).toBe(mine);
  });

  test('unknown names and malformed codecs give undefined', () => {
    expect(resolveCodec('uuid' as never)).toBeUndefined();
    expect(resolveCodec('toString' as never)).toBeUndefined();
    expect(resolveCodec('__proto__' as never)).toBeUndefined();
    expect(resolveCodec({ name: 'broken' } as never)).toBeUndefined();
    expect(resolveCodec(null as never)).toBeUndefined();
  });

  test('isBuiltinCodecName ignores inherited object keys', () => {
    expect(isBuiltinCodecName('sdk')).toBe(true);
    expect(isBuiltinCodecName('constructor')).toBe(false);
    expect(isBuiltinCodecName('hasOwnProperty')).toBe(false);
  });
});

describe('safeDecode', () => {
  test('swallows a throwing user codec', () => {
    const throwing: EventIdCodec = {
      name: 'throwing',
      decode() {
        throw new Error('boom');
      },
    };
    expect(safeDecode(throwing, '4821')).toBeUndefined();
  });

  test.each([null, 42, 'stream', true])('drops a non-object result %j', result => {
    const odd = { name: 'odd', decode: () => result } as unknown as EventIdCodec;
    expect(safeDecode(odd, 'x')).toBeUndefined();
  });

  test('passes a well-formed result through', () => {
    expect(safeDecode(integerCodec, '7')).toEqual({ sequence: 7, dense: true });
  });
});
