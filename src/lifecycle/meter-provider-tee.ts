/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A MeterProvider that hands every instrument call to several providers, so that prom-client gets forkwatch's
 * metrics without taking them away from the OpenTelemetry pipeline the app already has (register.ts uses it when
 * forkwatch/prom-client adds a MeterProvider).
 */
import type {
  Attributes,
  BatchObservableCallback,
  BatchObservableResult,
  Meter,
  MeterOptions,
  MeterProvider as ApiMeterProvider,
  MetricOptions,
  Observable,
  ObservableCallback,
} from '@opentelemetry/api';

const PARTS = Symbol('forkwatch.tee.parts');
type TeeObservable = Observable & { [PARTS]: Observable[] };

/** @internal */
export function teeMeterProvider(providers: ApiMeterProvider[]): ApiMeterProvider {
  if (providers.length === 1) return providers[0]!;
  return {
    getMeter(name: string, version?: string, options?: MeterOptions): Meter {
      return teeMeter(providers.map(p => p.getMeter(name, version, options)));
    },
  };
}

function teeMeter(meters: Meter[]): Meter {
  const adders = (name: string, options: MetricOptions | undefined, kind: 'createCounter' | 'createUpDownCounter') => {
    const parts = meters.map(m => m[kind](name, options));
    return {
      add: (value: number, attributes?: Attributes, ctx?: never) => {
        for (const p of parts) p.add(value, attributes, ctx);
      },
    };
  };
  const recorders = (name: string, options: MetricOptions | undefined, kind: 'createHistogram' | 'createGauge') => {
    const parts = meters.map(m => m[kind](name, options));
    return {
      record: (value: number, attributes?: Attributes, ctx?: never) => {
        for (const p of parts) p.record(value, attributes, ctx);
      },
    };
  };
  const observable = (
    name: string,
    options: MetricOptions | undefined,
    kind: 'createObservableGauge' | 'createObservableCounter' | 'createObservableUpDownCounter',
  ): TeeObservable => {
    const parts = meters.map(m => m[kind](name, options));
    return {
      [PARTS]: parts,
      addCallback: (cb: ObservableCallback) => {
        for (const p of parts) p.addCallback(cb);
      },
      removeCallback: (cb: ObservableCallback) => {
        for (const p of parts) p.removeCallback(cb);
      },
    };
  };
  const batchCallbacks = new Map<BatchObservableCallback, BatchObservableCallback[]>();
  const partOf = (o: Observable, i: number) => (o as Partial<TeeObservable>)[PARTS]?.[i] ?? o;
  return {
    createCounter: (name, options) => adders(name, options, 'createCounter'),
    createUpDownCounter: (name, options) => adders(name, options, 'createUpDownCounter'),
    createHistogram: (name, options) => recorders(name, options, 'createHistogram'),
    createGauge: (name, options) => recorders(name, options, 'createGauge'),
    createObservableGauge: (name, options) => observable(name, options, 'createObservableGauge'),
    createObservableCounter: (name, options) => observable(name, options, 'createObservableCounter'),
    createObservableUpDownCounter: (name, options) => observable(name, options, 'createObservableUpDownCounter'),
    addBatchObservableCallback(callback: BatchObservableCallback, observables: Observable[]) {
      const wrapped = meters.map((meter, i) => {
        const perMeter: BatchObservableCallback = (result: BatchObservableResult) =>
          callback({ observe: (o, value, attributes) => result.observe(partOf(o, i), value, attributes) });
        meter.addBatchObservableCallback(
          perMeter,
          observables.map(o => partOf(o, i)),
        );
        return perMeter;
      });
      batchCallbacks.set(callback, wrapped);
    },
    removeBatchObservableCallback(callback: BatchObservableCallback, observables: Observable[]) {
      const wrapped = batchCallbacks.get(callback);
      if (!wrapped) return;
      batchCallbacks.delete(callback);
      for (const [i, meter] of meters.entries())
        meter.removeBatchObservableCallback(
          wrapped[i]!,
          observables.map(o => partOf(o, i)),
        );
    },
  };
}
