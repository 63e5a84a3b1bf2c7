/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch_instrumentation_info through the real metrics SDK and the OpenTelemetry Prometheus exporter: one
 * `none` series before any class is patched, one series per patched SDK class with the route that found it, back to
 * `none` after disable(); the fetch observer as its own series, 1 only once it judged an MCP exchange; the `unjudged`
 * series for MCP an HTTP server answers with no server transport patched; and in a fresh process, the classes the
 * module hooks patch when the app requires the SDK.
 */
import { spawnSync } from 'node:child_process';
import diagnosticsChannel from 'node:diagnostics_channel';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as streamableHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as sse from '@modelcontextprotocol/sdk/client/sse.js';
import * as webStandardServer from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
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

const NONE = `route="none",sdk_class="none",sdk_package="none",version="${PACKAGE_VERSION}"`;
const WIRE = `route="wire",sdk_class="fetch",sdk_package="fetch",version="${PACKAGE_VERSION}"`;
const UNJUDGED = `route="http_server",sdk_class="unjudged",sdk_package="none",version="${PACKAGE_VERSION}"`;

/** `subject` enabled on its own meter provider, and a scrape of it. */
function metricsOf(subject: ForkwatchInstrumentation) {
  instrumentation = subject;
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  subject.setMeterProvider(meterProvider);
  subject.enable();
  return {
    scrape: async () => new PrometheusSerializer().serialize((await exporter.collect()).resourceMetrics),
    stop: async () => {
      subject.disable();
      await meterProvider.shutdown();
    },
  };
}

/** A node:http server on 127.0.0.1 answering with `handle`. */
async function listen(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handle);
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () => new Promise<void>(resolve => server.close(() => resolve())),
  };
}

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
    const after = await scrape();
    expect(infoSeries(after)).toEqual([none]);
    // The classes stay in the output at 0: once reported, a series stays in the SDK's cumulative output.
    expect(after).toMatch(new RegExp(`^${NAME}\\{[^}]*sdk_class="SSEClientTransport"[^}]*\\} 0$`, 'm'));
    await meterProvider.shutdown();
  });

  test('the wire observer counts only once it judged an MCP exchange: a session stream it watched', async () => {
    const { scrape, stop } = metricsOf(new ForkwatchInstrumentation({ observeFetch: true }));
    const server = await listen((req, res) => {
      if (req.method !== 'GET') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end('id: 1\ndata: {}\n\n');
    });
    try {
      // Installed in every process, and judging nothing yet: not coverage.
      expect(infoSeries(await scrape())).toEqual([NONE]);
      expect(await scrape()).toMatch(new RegExp(`^${NAME}\\{[^}]*sdk_class="fetch"[^}]*\\} 0$`, 'm'));
      // Traffic that is not MCP passes through and judges nothing.
      await (await fetch(server.url)).text();
      expect(infoSeries(await scrape())).toEqual([NONE]);
      const stream = await fetch(server.url, {
        headers: { accept: 'text/event-stream', 'mcp-session-id': 's1', 'mcp-protocol-version': '2025-06-18' },
      });
      await stream.text();
      expect(infoSeries(await scrape())).toEqual([WIRE]);
    } finally {
      await server.close();
      await stop();
    }
  });

  test('MCP answered by an HTTP server while no server transport is patched is unjudged, until one is', async () => {
    const { scrape, stop } = metricsOf(new ForkwatchInstrumentation({ observeFetch: false }));
    const server = await listen((req, res) => {
      if (req.headers.authorization !== 'ok') return void res.writeHead(401).end();
      const sse = String(req.url).includes('sse');
      res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json' });
      res.end(sse ? 'data: {}\n\n' : '{}');
    });
    const post = (headers: Record<string, string>, path = '/mcp') =>
      fetch(`${server.url}${path}`, { method: 'POST', headers, body: '{}' }).then(r => r.text());
    const mcpAccept = { accept: 'application/json, text/event-stream' };
    try {
      expect(infoSeries(await scrape())).toEqual([NONE]);
      // Not MCP exchanges: a POST that does not accept both, an MCP request refused, a GET.
      await post({ accept: 'application/json', authorization: 'ok' });
      await post(mcpAccept);
      await fetch(server.url, { headers: { ...mcpAccept, authorization: 'ok' } }).then(r => r.text());
      expect(infoSeries(await scrape())).toEqual([NONE]);
      await post({ ...mcpAccept, authorization: 'ok' }, '/mcp?sse');
      expect(infoSeries(await scrape())).toEqual([UNJUDGED, NONE]);
      // A process with a patched server transport judges its server's traffic (per process: see the runbook).
      instrumentation!.manuallyInstrument(webStandardServer);
      expect(infoSeries(await scrape())).toEqual([
        `route="manual",sdk_class="WebStandardStreamableHTTPServerTransport",sdk_package="manual",version="${PACKAGE_VERSION}"`,
      ]);
    } finally {
      await server.close();
      await stop();
    }
  });

  test("the unjudged-traffic watch leaves node:http's response channel while a server transport is patched", async () => {
    // A subscriber makes node:http publish a message for every response the host's servers finish (issue 50).
    const finish = diagnosticsChannel.channel('http.server.response.finish');
    const before = finish.hasSubscribers;
    const subject = new ForkwatchInstrumentation({ observeFetch: false });
    const { stop } = metricsOf(subject);
    try {
      expect(finish.hasSubscribers).toBe(true);
      subject.manuallyInstrument(webStandardServer);
      expect(finish.hasSubscribers).toBe(before);
    } finally {
      await stop();
    }
    expect(finish.hasSubscribers).toBe(before);
    // Enabled again with nothing patched: it listens again, and an unpatch (disable) leaves the channel.
    const again = new ForkwatchInstrumentation({ observeFetch: false });
    const second = metricsOf(again);
    expect(finish.hasSubscribers).toBe(true);
    await second.stop();
    expect(finish.hasSubscribers).toBe(before);
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
    ]);
    // The wire observer is installed, and at 0: it judged no MCP exchange in this process.
    expect(res.stderr).toMatch(new RegExp(`^${NAME}\\{[^}]*sdk_class="fetch"[^}]*\\} 0$`, 'm'));
    for (const s of series) {
      expect(s).toContain('sdk_package="@modelcontextprotocol/sdk"');
      expect(s).toMatch(/route="(otel_hook|cjs_hook)"/);
    }
  });
});
