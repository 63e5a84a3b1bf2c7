/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A counter for the per-event hot path. The SDK's synchronous Counter.add() hashes its attributes on every call
 * (sorted, stringified: about 1 µs, the largest part of forkwatch's cost per stored event). A TallyCounter's add()
 * only adds to a number kept for that attributes object; an ObservableCounter of the same name reports the sums at
 * each collection. The exported family is the same: a monotonic cumulative sum (a Prometheus counter), every label
 * combination present from the start at 0.
 */
import type {
  Attributes,
  Counter,
  Meter,
  MetricOptions,
  ObservableCounter,
  ObservableResult,
} from '@opentelemetry/api';

interface Tally {
  readonly attributes: Attributes;
  sum: number;
}

const NO_ATTRIBUTES: Attributes = Object.freeze({});

export class TallyCounter implements Counter {
  /** One tally per distinct label set, found by the attributes object first (callers pass shared constants). */
  private readonly byObject = new WeakMap<Attributes, Tally>();
  /** Reported at every collection: the label sets created at 0, then each one counted since. */
  private readonly byKey = new Map<string, Tally>();

  private readonly observable: ObservableCounter;
  private readonly callback = (result: ObservableResult) => this.report(result);

  /**
   * `replaces`: the counter this one takes over (the instruments made again for a meter provider): it stops
   * reporting and its sums continue here. Two callbacks observing one series of one meter would each be taken as a
   * cumulative value, and the SDK exports the running sum of both: every add counted again at each collection.
   */
  constructor(
    meter: Meter,
    name: string,
    options: MetricOptions,
    zeros: readonly Attributes[],
    replaces?: TallyCounter,
  ) {
    if (replaces) {
      replaces.detach();
      for (const tally of replaces.byKey.values()) this.tallyFor(tally.attributes).sum = tally.sum;
    }
    for (const attributes of zeros) this.tallyFor(attributes);
    this.observable = meter.createObservableCounter(name, options);
    this.observable.addCallback(this.callback);
  }

  /** Stops reporting (its replacement reports the sums). */
  detach(): void {
    this.observable.removeCallback(this.callback);
  }

  /** The last label set added to: a hot path adds to one shared attributes object, so no lookup at all. */
  private lastAttributes: Attributes | undefined = undefined;
  private lastTally: Tally | undefined = undefined;

  add(value: number, attributes: Attributes = NO_ATTRIBUTES): void {
    // As the SDK's counter: negative and non-finite values are not counted.
    if (!(value >= 0) || value === Number.POSITIVE_INFINITY) return;
    if (attributes === this.lastAttributes) {
      this.lastTally!.sum += value;
      return;
    }
    const tally = this.byObject.get(attributes) ?? this.tallyFor(attributes);
    this.lastAttributes = attributes;
    this.lastTally = tally;
    tally.sum += value;
  }

  private tallyFor(attributes: Attributes): Tally {
    const key = JSON.stringify(
      Object.keys(attributes)
        .sort()
        .map(k => [k, attributes[k]]),
    );
    let tally = this.byKey.get(key);
    if (tally === undefined) {
      tally = { attributes: { ...attributes }, sum: 0 };
      this.byKey.set(key, tally);
    }
    this.byObject.set(attributes, tally);
    return tally;
  }

  private report(result: ObservableResult): void {
    for (const tally of this.byKey.values()) result.observe(tally.sum, tally.attributes);
  }
}
