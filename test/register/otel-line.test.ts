/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What register does differently on the OpenTelemetry JS 2.x and 3.x lines (lifecycle/otel-line.ts and
 * register-tracing.ts), against the real packages of the dev tree (the 2.x line, with @opentelemetry/sdk-trace 2.12,
 * the package 3.x keeps alone). The 3.x line itself runs in test/register/npm-pack-otel-lines.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { OPTIONAL_PEERS, otelLine, peerInstallHint, resolvedVersion } from '../../src/lifecycle/otel-line';
import {
  SDK_TRACE_PACKAGE,
  batchOptionsFromEnv,
  samplerFromEnv,
  tracingSdkOf,
} from '../../src/lifecycle/register-tracing';

const pkg = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
const sdkTrace = require('@opentelemetry/sdk-trace');

afterEach(() => {
  vi.unstubAllEnvs();
});

test('the optional peers register names are exactly package.json peerDependenciesMeta, all optional', () => {
  expect(Object.keys(pkg.peerDependenciesMeta).sort()).toEqual([...OPTIONAL_PEERS].sort());
  for (const name of OPTIONAL_PEERS) expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
  // The API is the one required peer; every OpenTelemetry package register needs is a dependency of either line.
  expect(
    Object.keys(pkg.peerDependencies).filter(name => !(OPTIONAL_PEERS as readonly string[]).includes(name)),
  ).toEqual(['@opentelemetry/api']);
});

test('no dependency pins one OpenTelemetry line: each range takes 2.x and 3.x (0.2xx and 0.3xx)', () => {
  for (const [name, range] of Object.entries(pkg.dependencies as Record<string, string>)) {
    if (!name.startsWith('@opentelemetry/')) continue;
    expect(range, name).toMatch(/^(\^2\.0\.0 \|\| \^3\.0\.0|>=0\.200\.0 <0\.400\.0)$/);
  }
});

test('the line and the install hints follow the packages resolved (the dev tree: 2.x)', () => {
  expect(otelLine()).toBe(2);
  const instrumentation = resolvedVersion('@opentelemetry/instrumentation');
  const core = require('@opentelemetry/core').SDK_INFO['telemetry.sdk.version'];
  expect(instrumentation).toMatch(/^0\.2\d\d\.\d+$/);
  expect(peerInstallHint('@opentelemetry/exporter-trace-otlp-proto')).toBe(
    `@opentelemetry/exporter-trace-otlp-proto@~${instrumentation}`,
  );
  // sdk-logs is 0.x on 2.x (stable, 3.x, on the next line); sdk-trace is stable on both.
  expect(peerInstallHint('@opentelemetry/sdk-logs')).toBe(`@opentelemetry/sdk-logs@~${instrumentation}`);
  expect(peerInstallHint('@opentelemetry/sdk-trace')).toBe(`@opentelemetry/sdk-trace@^${core}`);
  expect(resolvedVersion('@opentelemetry/no-such-package')).toBeUndefined();
});

describe('sdk-trace (3.x, and 2.9+) reads no variable: register reads them as sdk-trace-base 2.x does', () => {
  test.each([
    [undefined, undefined, 'ParentBased{root=AlwaysOnSampler'],
    ['always_on', undefined, 'AlwaysOnSampler'],
    ['always_off', undefined, 'AlwaysOffSampler'],
    ['traceidratio', '0.25', 'TraceIdRatioBased{0.25}'],
    ['traceidratio', '7', 'TraceIdRatioBased{1}'],
    ['parentbased_always_off', undefined, 'ParentBased{root=AlwaysOffSampler'],
    ['parentbased_traceidratio', '0.5', 'ParentBased{root=TraceIdRatioBased{0.5}'],
    ['no_such_sampler', undefined, 'ParentBased{root=AlwaysOnSampler'],
  ])('OTEL_TRACES_SAMPLER=%s, _ARG=%s: %s', (name, arg, expected) => {
    if (name !== undefined) vi.stubEnv('OTEL_TRACES_SAMPLER', name);
    if (arg !== undefined) vi.stubEnv('OTEL_TRACES_SAMPLER_ARG', arg);
    expect(String(samplerFromEnv(sdkTrace))).toMatch(new RegExp(`^${expected.replace(/[{}]/g, '\\$&')}`));
  });

  test('OTEL_BSP_*: numbers taken, bad values left to the SDK default', () => {
    vi.stubEnv('OTEL_BSP_MAX_QUEUE_SIZE', '100');
    vi.stubEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '10');
    vi.stubEnv('OTEL_BSP_SCHEDULE_DELAY', 'soon');
    vi.stubEnv('OTEL_BSP_EXPORT_TIMEOUT', '-5');
    expect(batchOptionsFromEnv()).toEqual({ maxQueueSize: 100, maxExportBatchSize: 10 });
  });

  test('the provider built from sdk-trace samples by the variable: always_off records nothing', () => {
    vi.stubEnv('OTEL_TRACES_SAMPLER', 'always_off');
    const ended: string[] = [];
    const processor = {
      onStart() {},
      onEnd(span: { name: string }) {
        ended.push(span.name);
      },
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const sdk = tracingSdkOf(sdkTrace, SDK_TRACE_PACKAGE);
    const provider = sdk.provider(undefined, [processor as never]);
    provider.getTracer('t').startSpan('dropped').end();
    expect(ended).toEqual([]);
    vi.stubEnv('OTEL_TRACES_SAMPLER', 'always_on');
    const recording = sdk.provider(undefined, [processor as never]);
    recording.getTracer('t').startSpan('kept').end();
    expect(ended).toEqual(['kept']);
  });
});
