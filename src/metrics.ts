/**
 * forkwatch's metric instruments, created in one place from the specs in names.ts.
 * Counters start every label combination at 0 so that rate() and increase() see the very first fork.
 */
import { type Attributes, type Counter, type Histogram, type Meter, ValueType } from '@opentelemetry/api';
import { METRICS, type MetricKey, type MetricSpec, labelCombinations } from './names';

type CounterKeys = { [K in MetricKey]: (typeof METRICS)[K]['kind'] extends 'counter' ? K : never }[MetricKey];
type HistogramKeys = Exclude<MetricKey, CounterKeys>;

export type ForkwatchInstruments = { [K in CounterKeys]: Counter } & { [K in HistogramKeys]: Histogram };

export function createInstruments(meter: Meter): ForkwatchInstruments {
  const instruments = {} as Record<MetricKey, Counter | Histogram>;
  for (const key of Object.keys(METRICS) as MetricKey[]) {
    const spec: MetricSpec = METRICS[key];
    if (spec.kind === 'counter') {
      const counter = meter.createCounter(spec.otelName, {
        description: spec.description,
        unit: spec.unit,
        valueType: ValueType.INT,
      });
      for (const attributes of labelCombinations(spec)) counter.add(0, attributes as Attributes);
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
