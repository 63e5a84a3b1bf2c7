/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** clip(): what forkwatch keeps of a value the peer chose is printable and bounded, whatever its length. */
import { describe, expect, test } from 'vitest';
import { PEER_VALUE_MAX_CHARS, clip, displayEventId } from '../../src/core';

describe('clip', () => {
  test('a value within the limit is kept as it is', () => {
    expect(clip('2025-11-25', PEER_VALUE_MAX_CHARS.protocolVersion)).toBe('2025-11-25');
    expect(clip('x'.repeat(32), 32)).toBe('x'.repeat(32));
  });

  test('a longer one keeps its first characters and says its length, within limit + 20', () => {
    const huge = `2025-11-25${'v'.repeat(59_990)}`;
    const clipped = clip(huge, PEER_VALUE_MAX_CHARS.protocolVersion);
    expect(clipped).toBe(`2025-11-25${'v'.repeat(22)}…(60000 chars)`);
    expect(clipped.length).toBeLessThanOrEqual(PEER_VALUE_MAX_CHARS.protocolVersion + 20);
  });

  test('control characters become U+FFFD, and a surrogate pair is never cut in half', () => {
    expect(clip('a\u0000b\u001bc\u009bd', 10)).toBe('a\uFFFDb\uFFFDc\uFFFDd');
    expect(clip(`${'a'.repeat(3)}😀tail`, 4)).toBe('aaa…(9 chars)');
  });

  test('displayEventId is clip at the event id limit', () => {
    const id = 'c'.repeat(100_000);
    expect(displayEventId(id)).toBe(clip(id, PEER_VALUE_MAX_CHARS.eventId));
    expect(displayEventId(id)!.length).toBeLessThanOrEqual(PEER_VALUE_MAX_CHARS.eventId + 20);
  });
});
