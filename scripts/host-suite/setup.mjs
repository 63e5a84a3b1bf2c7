/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The setup file of the host suite's instrumented runs (scripts/host-suite.mjs copies it beside the SDK's vitest
// config, so that `vitest` below is the checkout's own copy). It proves, per test file, that forkwatch patched the
// SDK classes that file loaded: the transform of the generated config appends to each SDK source module that defines
// a class forkwatch patches a call of forkwatch's manual API on that very class, and records what it found wrapped
// (`state.loaded`). This file adds, once per worker process, a MeterProvider of its own to forkwatch/register's
// instrumentation (registration.addMeterProvider, the hook forkwatch/prom-client uses), so that what forkwatch
// counted while the file's tests ran is read back: counters that moved prove the patched methods ran on the
// instances the tests made. One JSON line per test file goes to FORKWATCH_HOST_SUITE_PROOF.
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll } from 'vitest';

const STATE = Symbol.for('forkwatch.host-suite');
globalThis[STATE] ??= { loaded: [] };
const state = globalThis[STATE];
// Records before this index belong to earlier test files of a reused worker.
const firstRecord = state.loaded.length;
const registration = globalThis[Symbol.for('forkwatch.register')];

if (!state.reader && registration && typeof registration.addMeterProvider === 'function') {
  // The copy of the SDK that the installed forkwatch itself depends on.
  const sdk = createRequire(process.env.FORKWATCH_HOST_SUITE_PACKAGE)('@opentelemetry/sdk-metrics');
  class ProofReader extends sdk.MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  state.reader = new ProofReader();
  state.totals = new Map();
  registration.addMeterProvider(new sdk.MeterProvider({ readers: [state.reader] }));
}

/** Each forkwatch metric's total since the last call (a worker may run several files): counts, histogram counts. */
async function metricDeltas() {
  if (!state.reader) return { deltas: {}, info: [] };
  const { resourceMetrics } = await state.reader.collect();
  const deltas = {};
  const info = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      const name = metric.descriptor.name;
      if (!name.startsWith('forkwatch.')) continue;
      if (name === 'forkwatch.instrumentation.info') {
        for (const point of metric.dataPoints) if (point.value === 1) info.push(point.attributes);
        continue;
      }
      let total = 0;
      for (const point of metric.dataPoints) total += typeof point.value === 'number' ? point.value : point.value.count;
      const delta = total - (state.totals.get(name) ?? 0);
      state.totals.set(name, total);
      if (delta !== 0) deltas[name] = delta;
    }
  }
  return { deltas, info };
}

afterAll(async suite => {
  const { deltas, info } = await metricDeltas();
  const line = {
    file: suite?.filepath ?? suite?.file?.filepath,
    pid: process.pid,
    registration: registration ? registration.mode : 'absent',
    instrumentation: Boolean(registration?.instrumentation),
    loaded: state.loaded.slice(firstRecord),
    metrics: deltas,
    info,
  };
  appendFileSync(process.env.FORKWATCH_HOST_SUITE_PROOF, `${JSON.stringify(line)}\n`);
});
