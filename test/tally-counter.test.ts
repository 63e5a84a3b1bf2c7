/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * TallyCounter through the real metrics SDK: what a synchronous Counter would export, at a fraction of the cost per
 * add() (see src/shared/tally-counter.ts).
 */
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { describe, expect, test } from 'vitest';
import { createInstruments } from '../src/shared/metrics';
import { TallyCounter } from '../src/shared/tally-counter';

class PullReader extends MetricReader {
  constructor(temporality: AggregationTemporality) {
    super({ aggregationTemporalitySelector: () => temporality });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

async function points(reader: PullReader, name: string) {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics.flatMap(s => s.metrics).find(m => m.descriptor.name === name);
  if (!metric) throw new Error(`${name} not exported`);
  expect(metric.dataPointType).toBe(DataPointType.SUM);
  expect(metric.dataPointType === DataPointType.SUM && metric.isMonotonic).toBe(true);
  return Object.fromEntries(metric.dataPoints.map(p => [JSON.stringify(p.attributes), p.value]));
}

function setup(temporality = AggregationTemporality.CUMULATIVE) {
  const reader = new PullReader(temporality);
  const provider = new MeterProvider({ readers: [reader] });
  const counter = new TallyCounter(provider.getMeter('t'), 'events', { unit: '{event}' }, [{ k: 'a' }, { k: 'b' }]);
  return { reader, counter };
}

describe('TallyCounter', () => {
  test('exports every zero label set from the start, then the sums: a monotonic sum like a Counter', async () => {
    const { reader, counter } = setup();
    expect(await points(reader, 'events')).toEqual({ '{"k":"a"}': 0, '{"k":"b"}': 0 });
    const a = { k: 'a' };
    for (let i = 0; i < 5; i++) counter.add(1, a);
    counter.add(2, { k: 'a' }); // another object with the same labels: the same series
    counter.add(3, { k: 'c' }); // a label set not created at 0
    counter.add(1);
    expect(await points(reader, 'events')).toEqual({ '{"k":"a"}': 7, '{"k":"b"}': 0, '{"k":"c"}': 3, '{}': 1 });
  });

  test('ignores what a Counter ignores (negative, NaN, infinite), and keys by label values, not key order', async () => {
    const { reader, counter } = setup();
    counter.add(-1, { k: 'a' });
    counter.add(Number.NaN, { k: 'a' });
    counter.add(Number.POSITIVE_INFINITY, { k: 'a' });
    counter.add(1, { k: 'a', x: '1' });
    counter.add(1, { x: '1', k: 'a' });
    expect(await points(reader, 'events')).toEqual({ '{"k":"a"}': 0, '{"k":"b"}': 0, '{"k":"a","x":"1"}': 2 });
  });

  test('under delta temporality, each collection exports what was added since the last', async () => {
    const { reader, counter } = setup(AggregationTemporality.DELTA);
    const a = { k: 'a' };
    counter.add(4, a);
    expect((await points(reader, 'events'))['{"k":"a"}']).toBe(4);
    counter.add(1, a);
    expect((await points(reader, 'events'))['{"k":"a"}']).toBe(1);
  });

  test('made again on the same meter (registerInstrumentations given the global provider): each add is counted once, and the sums continue', async () => {
    const reader = new PullReader(AggregationTemporality.CUMULATIVE);
    const meter = new MeterProvider({ readers: [reader] }).getMeter('t');
    const first = new TallyCounter(meter, 'events', {}, [{ k: 'a' }]);
    first.add(2, { k: 'a' });
    const counter = new TallyCounter(meter, 'events', {}, [{ k: 'a' }], first);
    const a = { k: 'a' };
    // The fleet lab's replicas exported 18 to 56 times the events they stored: the old callback reported too.
    const seen = [];
    for (let i = 0; i < 4; i++) {
      counter.add(5, a);
      seen.push((await points(reader, 'events'))['{"k":"a"}']);
    }
    expect(seen).toEqual([7, 12, 17, 22]);
  });

  test("forkwatch's instruments made again for the provider they already had count each stored event once", async () => {
    const reader = new PullReader(AggregationTemporality.CUMULATIVE);
    const meter = new MeterProvider({ readers: [reader] }).getMeter('forkwatch');
    // What InstrumentationBase does: instruments in the constructor (global provider), again on setMeterProvider.
    const instruments = createInstruments(meter, createInstruments(meter));
    const attrs = { transport: 'streamable_http' };
    const seen = [];
    for (let i = 0; i < 3; i++) {
      instruments.serverEvents.add(1, attrs);
      seen.push((await points(reader, 'forkwatch.server.events'))['{"transport":"streamable_http"}']);
    }
    expect(seen).toEqual([1, 2, 3]);
  });
});
