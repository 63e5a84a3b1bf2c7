/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { describe, expect, test } from 'vitest';
import {
  DensityWatch,
  type EventIdCodec,
  type SequenceDensity,
  autoCodec,
  hexSequenceCodec,
  goSdkCodec,
  learnDensity,
  liveGapOf,
  sdkCodec,
} from '../../src/core';

/** Feeds one connection's ids in order, starting from what the session knew. */
function watch(ids: string[], known: SequenceDensity = 'unseen', codec: EventIdCodec = autoCodec): SequenceDensity {
  const w = new DensityWatch(codec);
  for (const id of ids) known = w.observe(id, known);
  return known;
}

describe('sequence density, learned from live steps', () => {
  test('one id proves nothing; a step of one proves density', () => {
    expect(watch(['7'])).toBe('unseen');
    expect(watch(['7', '8'])).toBe('dense');
  });

  test("a global counter (ids jump by the other sessions' events) is sparse, even after steps of one", () => {
    expect(watch(['3', '5', '8'])).toBe('sparse');
    expect(watch(['3', '4', '7'])).toBe('sparse');
    // Final: once a live connection jumped, a later run of single steps changes nothing.
    expect(watch(['20', '21', '22'], 'sparse')).toBe('sparse');
  });

  test('the evidence is per connection: a new connection does not compare with the last one', () => {
    // The step across a resume is what the verdict measures, never evidence.
    expect(watch(['9'], watch(['4', '5']))).toBe('dense');
    expect(watch(['40', '41'], watch(['4']))).toBe('dense');
  });

  test('duplicates and replays on a live connection are no evidence', () => {
    expect(learnDensity('unseen', 0)).toBe('unseen');
    expect(learnDensity('dense', -3)).toBe('dense');
    expect(learnDensity('dense', 2)).toBe('sparse');
  });

  test('per-stream counters compare within one stream key only', () => {
    expect(watch(['a:1', 'a:2'], 'unseen', hexSequenceCodec)).toBe('dense');
    expect(watch(['a:1', 'b:9'], 'unseen', hexSequenceCodec)).toBe('unseen');
  });

  test('formats without a dense sequence are never watched past their first id', () => {
    const ids = ['s_1732000000000_ab', 's_1732000000001_cd'];
    expect(watch(ids, 'unseen', sdkCodec)).toBe('unseen');
    expect(watch(['550e8400-e29b-41d4-a716-446655440000', '1', '2'])).toBe('unseen');
  });
});

describe('live gaps: ids a live connection skipped on a stream seen dense', () => {
  /** The gaps one connection's ids show, in order, starting from what the session knew. */
  function gaps(ids: string[], known: SequenceDensity = 'unseen', codec: EventIdCodec = autoCodec): number[] {
    const w = new DensityWatch(codec);
    const out: number[] = [];
    for (const id of ids) {
      known = w.observe(id, known);
      out.push(w.takeGap());
    }
    return out;
  }

  test('a step past one after a step of one, in a format that names its stream: the ids skipped', () => {
    expect(gaps(['a:1', 'a:2', 'a:4'], 'unseen', hexSequenceCodec)).toEqual([0, 0, 1]);
    expect(gaps(['_1', '_2', '_3', '_7'], 'unseen', goSdkCodec)).toEqual([0, 0, 0, 3]);
    // Read once: the next step of one is no gap.
    expect(gaps(['a:1', 'a:2', 'a:4', 'a:5'], 'unseen', hexSequenceCodec)).toEqual([0, 0, 1, 0]);
  });

  test('at most once a session: the numbering is sparse after the first gap', () => {
    const afterGap = watch(['a:1', 'a:2', 'a:4'], 'unseen', hexSequenceCodec);
    expect(afterGap).toBe('sparse');
    expect(gaps(['a:5', 'a:6', 'a:9'], afterGap, hexSequenceCodec)).toEqual([0, 0, 0]);
  });

  test('no gap without evidence of density, nor for integers, which name no stream', () => {
    // The first step already jumps: a global counter as likely as a loss.
    expect(gaps(['a:1', 'a:3'], 'unseen', hexSequenceCodec)).toEqual([0, 0]);
    // One counter per session shared by its streams: the standalone stream jumps by the request streams' events.
    expect(gaps(['1', '2', '4'])).toEqual([0, 0, 0]);
    expect(liveGapOf('dense', 3, false)).toBe(0);
    // Another stream key on the connection, duplicates and replays: no step to judge.
    expect(gaps(['a:1', 'a:2', 'b:9'], 'unseen', hexSequenceCodec)).toEqual([0, 0, 0]);
    expect(liveGapOf('dense', 0, true)).toBe(0);
    expect(liveGapOf('dense', -2, true)).toBe(0);
    expect(liveGapOf('sparse', 5, true)).toBe(0);
    expect(liveGapOf('unseen', 5, true)).toBe(0);
  });
});
