/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The client's view of a replay after colliding ids: a replayed JSON-RPC response to a request the client already
 * got an answer to is counted in forkwatch_client_foreign_responses_total. ForkwatchInstrumentation in-process on the
 * real SDK 1.32.2 client, against the boundary lab's real SDK servers (lab/boundary/), with the real metrics SDK.
 */
import * as streamableHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { runBoundaryScenario } from '../../lab/boundary/run.mjs';
import { ForkwatchInstrumentation } from '../../src';
import { METRICS } from '../../src/shared/names';
import { sample } from '../support/lab';

let exporter: PrometheusExporter;
let meterProvider: MeterProvider;
let instrumentation: ForkwatchInstrumentation;
const foreign = METRICS.clientForeignResponses.prometheusName;
const duplicates = METRICS.clientDuplicateEvents.prometheusName;

async function scrape() {
  const { resourceMetrics } = await exporter.collect();
  return new PrometheusSerializer().serialize(resourceMetrics);
}

beforeEach(() => {
  exporter = new PrometheusExporter({ preventServerStart: true });
  meterProvider = new MeterProvider({ readers: [exporter] });
  instrumentation = new ForkwatchInstrumentation();
  instrumentation.setMeterProvider(meterProvider);
  instrumentation.manuallyInstrument(streamableHttp);
});

afterEach(async () => {
  instrumentation.disable();
  await meterProvider.shutdown();
});

const t = { transport: 'streamable_http' };

test('the series starts at 0', async () => {
  expect(sample(await scrape(), foreign, t)).toBe(0);
  expect(sample(await scrape(), foreign, { transport: 'sse' })).toBe(0);
});

test("colliding ids: the replay of the other stream carries an old call's response, counted foreign", async () => {
  const r = await runBoundaryScenario('colliding-ids');
  expect(r.truth.foreignReceived).toBeGreaterThan(0);
  const text = await scrape();
  expect(sample(text, foreign, t)).toBeGreaterThanOrEqual(1);
  // The integer ids collide with the ones consumed on B, so the frames also count as duplicates: the foreign series
  // says what they carried (a response to a request already answered), which no id can.
  expect(sample(text, duplicates, t)).toBeGreaterThan(0);
});

test.each(['request-stream-resume-here', 'cross-session-one-process', 'per-session-keys-one-process'])(
  '%s: no foreign response',
  async name => {
    const r = await runBoundaryScenario(name);
    expect(r.truth.lost).toBe(0);
    const text = await scrape();
    expect(sample(text, foreign, t)).toBe(0);
    expect(sample(text, duplicates, t)).toBe(0);
  },
);
