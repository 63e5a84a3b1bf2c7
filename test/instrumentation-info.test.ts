/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch_instrumentation_info through the real metrics SDK and the OpenTelemetry Prometheus exporter: one
 * `none` series before any class is patched, one series per patched SDK class with the route that found it, back to
 * `none` after disable(), the fetch observer as its own series; and in a fresh process, the classes the module hooks patch when the app requires the SDK.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as streamableHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as sse from '@modelcontextprotocol/sdk/client/sse.js';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, test } from 'vitest';
import { ForkwatchInstrumentation } from '../src';
import { METRICS } from '../src/shared/names';
import { PACKAGE_VERSION } from '../src/shared/version';
import { parseMetricFamilies } from './support/scrape';

const NAME = METRICS.instrumentationInfo.prometheusName;
const ROOT = join(__dirname, '..');

/** The info series of a scrape that are 1, as sorted `label=value,…` strings (the others are 0). */
function infoSeries(text: string): string[] {
  return text
    .split('\n')
    .filter(line => line.startsWith(`${NAME}{`))
    .flatMap(line => {
      const [, labels, value] = /^[^{]+\{(.*)\} (\S+)$/.exec(line) ?? [];
      expect(['0', '1'], line).toContain(value);
      if (value === '0') return [];
      const own = (labels ?? '').split(/,(?=\w+=")/).filter(l => !l.startsWith('otel_scope_'));
      return [own.sort().join(',')];
    })
    .sort();
}

let instrumentation: ForkwatchInstrumentation | undefined;
afterEach(() => instrumentation?.disable());

describe('forkwatch_instrumentation_info', () => {
  test('none before a patch, one series per class and route after, none again after disable()', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const meterProvider = new MeterProvider({ readers: [exporter] });
    const scrape = async () => new PrometheusSerializer().serialize((await exporter.collect()).resourceMetrics);
    instrumentation = new ForkwatchInstrumentation({ enabled: false, observeFetch: false });
    instrumentation.setMeterProvider(meterProvider);
    instrumentation.enable();
    const none = `route="none",sdk_class="none",sdk_package="none",version="${PACKAGE_VERSION}"`;
    const before = await scrape();
    expect(parseMetricFamilies(before).get(NAME)?.type).toBe('gauge');
    // The test process already loaded the SDK through Vite, outside require(): nothing is patched yet.
    expect(infoSeries(before)).toEqual([none]);

    instrumentation.manuallyInstrument(streamableHttp, sse);
    expect(infoSeries(await scrape())).toEqual([
      `route="manual",sdk_class="SSEClientTransport",sdk_package="manual",version="${PACKAGE_VERSION}"`,
      `route="manual",sdk_class="StreamableHTTPClientTransport",sdk_package="manual",version="${PACKAGE_VERSION}"`,
    ]);

    instrumentation.disable();
    instrumentation.setConfig({ observeFetch: true });
    instrumentation.enable();
    const wire = `route="wire",sdk_class="fetch",sdk_package="fetch",version="${PACKAGE_VERSION}"`;
    expect(infoSeries(await scrape())).toEqual([wire]);
    instrumentation.disable();
    const after = await scrape();
    expect(infoSeries(after)).toEqual([none]);
    // The classes stay in the output at 0: once reported, a series stays in the SDK's cumulative output.
    expect(after).toMatch(new RegExp(`^${NAME}\\{[^}]*sdk_class="SSEClientTransport"[^}]*\\} 0$`, 'm'));
    await meterProvider.shutdown();
  });

  test('in a fresh CommonJS process: the classes the app requires, patched by a module hook', () => {
    const script = `
      const { ForkwatchInstrumentation } = require('./build/src');
      const { PrometheusExporter, PrometheusSerializer } = require('@opentelemetry/exporter-prometheus');
      const { MeterProvider } = require('@opentelemetry/sdk-metrics');
      const exporter = new PrometheusExporter({ preventServerStart: true });
      const instrumentation = new ForkwatchInstrumentation();
      instrumentation.setMeterProvider(new MeterProvider({ readers: [exporter] }));
      require('@modelcontextprotocol/sdk/client/streamableHttp.js');
      require('@modelcontextprotocol/sdk/server/streamableHttp.js');
      exporter.collect().then(({ resourceMetrics }) =>
        process.stderr.write(new PrometheusSerializer().serialize(resourceMetrics)));`;
    const res = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toBe('');
    const series = infoSeries(res.stderr);
    expect(series.map(s => /sdk_class="(\w+)"/.exec(s)?.[1])).toEqual([
      'StreamableHTTPClientTransport',
      // SDK 1.32's Node StreamableHTTPServerTransport wraps this class, which is the one patched.
      'WebStandardStreamableHTTPServerTransport',
      'fetch',
    ]);
    for (const s of series) {
      if (s.includes('sdk_class="fetch"')) continue;
      expect(s).toContain('sdk_package="@modelcontextprotocol/sdk"');
      expect(s).toMatch(/route="(otel_hook|cjs_hook)"/);
    }
  });
});
