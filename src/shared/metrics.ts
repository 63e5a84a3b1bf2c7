/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch's metric instruments, created in one place from the specs in names.ts.
 * Counters start every label combination at 0 so that rate() and increase() see the very first fork. A counter
 * recorded once per event (`tallied` in names.ts) is a TallyCounter.
 */
import { type Attributes, type Counter, type Histogram, type Meter, ValueType } from '@opentelemetry/api';
import { METRICS, type MetricKey, type MetricSpec, labelCombinations } from './names';
import { TallyCounter } from './tally-counter';

type KeysOf<Kind> = { [K in MetricKey]: (typeof METRICS)[K]['kind'] extends Kind ? K : never }[MetricKey];
type CounterKeys = KeysOf<'counter'>;
type HistogramKeys = KeysOf<'histogram'>;

export type ForkwatchInstruments = { [K in CounterKeys]: Counter } & { [K in HistogramKeys]: Histogram };

/** `previous`: the instruments these replace (a new meter provider, or the same one given again): see TallyCounter. */
export function createInstruments(meter: Meter, previous?: ForkwatchInstruments): ForkwatchInstruments {
  const instruments = {} as Record<MetricKey, Counter | Histogram>;
  for (const key of Object.keys(METRICS) as MetricKey[]) {
    const spec: MetricSpec = METRICS[key];
    // The info gauge is observed by instrumentation-info.ts, from what was patched.
    if (spec.kind === 'gauge') continue;
    if (spec.kind === 'counter') {
      const options = { description: spec.description, unit: spec.unit, valueType: ValueType.INT };
      const zeros: Attributes[] = labelCombinations(spec);
      if (spec.tallied) {
        const replaced = previous?.[key as CounterKeys];
        const replaces = replaced instanceof TallyCounter ? replaced : undefined;
        instruments[key] = new TallyCounter(meter, spec.otelName, options, zeros, replaces);
        continue;
      }
      const counter = meter.createCounter(spec.otelName, options);
      for (const attributes of zeros) counter.add(0, attributes);
      instruments[key] = counter;
    } else {
      instruments[key] = meter.createHistogram(spec.otelName, {
        description: spec.description,
        unit: spec.unit,
        valueType: spec.unit === 's' ? ValueType.DOUBLE : ValueType.INT,
        advice: { explicitBucketBoundaries: [...(spec.buckets ?? [])] },
      });
    }
  }
  return instruments as ForkwatchInstruments;
}
