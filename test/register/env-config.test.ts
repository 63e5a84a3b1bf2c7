/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** readRegisterEnv: FORKWATCH_* and the OTEL_* variables forkwatch/register interprets, one diagnostic per bad value. */
import { describe, expect, test } from 'vitest';
import { BUILTIN_CODEC_NAMES } from '../../src/core/codecs';
import { DEFAULT_LEDGER_LIMITS } from '../../src/core/ledger';
import { DEFAULT_PROMETHEUS_PORT, FORKWATCH_ENV, readRegisterEnv } from '../../src/lifecycle/env-config';

describe('defaults (nothing set)', () => {
  const config = readRegisterEnv({});

  test('Prometheus on 9464, all interfaces; no traces, no logs; SDK enabled and started; no diagnostics', () => {
    expect(config).toEqual({
      sdkDisabled: false,
      startSdk: true,
      instrumentation: {},
      metricsExporters: ['prometheus'],
      tracesExporters: [],
      logsExporters: [],
      prometheus: { host: undefined, port: DEFAULT_PROMETHEUS_PORT },
      logLevel: 'warn',
      diagnostics: [],
    });
    expect(DEFAULT_PROMETHEUS_PORT).toBe(9464);
  });

  test('empty and blank values count as unset, as OpenTelemetry specifies', () => {
    const blank = Object.fromEntries(
      [
        ...Object.values(FORKWATCH_ENV),
        'OTEL_METRICS_EXPORTER',
        'OTEL_TRACES_EXPORTER',
        'OTEL_EXPORTER_PROMETHEUS_PORT',
        'OTEL_SDK_DISABLED',
      ].map(name => [name, '  ']),
    );
    expect(readRegisterEnv(blank)).toEqual(config);
  });
});

describe('FORKWATCH_* settings', () => {
  test('every setting reaches the instrumentation config', () => {
    const config = readRegisterEnv({
      FORKWATCH_ON_FORK: 'abort',
      FORKWATCH_CAPTURE_EVENT_IDS: 'false',
      FORKWATCH_CAPTURE_RAW_SESSION_ID: 'TRUE',
      FORKWATCH_CODEC: 'hex-sequence',
      FORKWATCH_VERDICT_TIMEOUT_MS: '2500',
      FORKWATCH_LEDGER_MAX_SESSIONS: '500',
      FORKWATCH_LEDGER_MAX_IDLE_MS: '60000',
      FORKWATCH_LEDGER_RECENT_IDS: '16',
      FORKWATCH_PROPAGATE_CONTEXT: '0',
      FORKWATCH_SHARED_EVENT_STORE: 'true',
      FORKWATCH_PER_REQUEST_REISSUE_WINDOW_MS: '120000',
      FORKWATCH_PER_REQUEST_MAX_TRACKED: '500',
      FORKWATCH_PER_REQUEST_BALANCER_HIDES_CLOSES: 'true',
      FORKWATCH_START_SDK: 'false',
    });
    expect(config.diagnostics).toEqual([]);
    expect(config.startSdk).toBe(false);
    expect(config.instrumentation).toEqual({
      onFork: 'abort',
      captureEventIds: false,
      captureRawSessionId: true,
      codec: 'hex-sequence',
      verdictTimeoutMs: 2500,
      ledger: { maxSessions: 500, maxIdleMs: 60000, recentIds: 16 },
      propagateContext: false,
      sharedEventStore: true,
      perRequest: { reissueWindowMs: 120000, maxTracked: 500, balancerHidesCloses: true },
    });
  });

  test('a bad per-request bound: one line naming it, and the default', () => {
    const config = readRegisterEnv({
      FORKWATCH_PER_REQUEST_REISSUE_WINDOW_MS: 'soon',
      FORKWATCH_PER_REQUEST_MAX_TRACKED: '0',
    });
    expect(config.instrumentation.perRequest).toBeUndefined();
    expect(config.diagnostics).toHaveLength(2);
    expect(config.diagnostics[0]).toContain('FORKWATCH_PER_REQUEST_REISSUE_WINDOW_MS');
    expect(config.diagnostics[1]).toContain('FORKWATCH_PER_REQUEST_MAX_TRACKED');
  });

  test.each(BUILTIN_CODEC_NAMES)('codec %s is accepted', codec => {
    expect(readRegisterEnv({ FORKWATCH_CODEC: codec }).instrumentation.codec).toBe(codec);
  });

  test('values are trimmed and case-insensitive where they are words', () => {
    const config = readRegisterEnv({
      FORKWATCH_ON_FORK: ' Abort ',
      FORKWATCH_CODEC: 'MCP-Proxy',
      FORKWATCH_VERDICT_TIMEOUT_MS: ' 900 ',
    });
    expect(config.instrumentation).toEqual({ onFork: 'abort', codec: 'mcp-proxy', verdictTimeoutMs: 900 });
    expect(config.diagnostics).toEqual([]);
  });

  test.each([
    ['FORKWATCH_ON_FORK', 'explode', /FORKWATCH_ON_FORK="explode" is not one of record, abort; using record/],
    [
      'FORKWATCH_CAPTURE_EVENT_IDS',
      'yes please',
      /FORKWATCH_CAPTURE_EVENT_IDS="yes please" is not a boolean.*; using true/,
    ],
    ['FORKWATCH_CAPTURE_RAW_SESSION_ID', '2', /FORKWATCH_CAPTURE_RAW_SESSION_ID="2" is not a boolean.*; using false/],
    [
      'FORKWATCH_CODEC',
      'base64',
      /FORKWATCH_CODEC="base64" is not one of auto, integer, sdk, mcp-proxy, hex-sequence, go-sdk, rmcp, csharp, java-sdk, kotlin, opaque; using auto/,
    ],
    [
      'FORKWATCH_VERDICT_TIMEOUT_MS',
      '10s',
      /FORKWATCH_VERDICT_TIMEOUT_MS="10s" is not an integer from 1 to 2147483647; using 10000/,
    ],
    ['FORKWATCH_VERDICT_TIMEOUT_MS', '0', /using 10000/],
    ['FORKWATCH_VERDICT_TIMEOUT_MS', '-5', /using 10000/],
    ['FORKWATCH_VERDICT_TIMEOUT_MS', '1.5', /using 10000/],
    ['FORKWATCH_VERDICT_TIMEOUT_MS', '3000000000', /using 10000/],
    [
      'FORKWATCH_LEDGER_MAX_SESSIONS',
      '1e4',
      new RegExp(`FORKWATCH_LEDGER_MAX_SESSIONS="1e4".*; using ${DEFAULT_LEDGER_LIMITS.maxSessions}`),
    ],
    [
      'FORKWATCH_LEDGER_MAX_IDLE_MS',
      'forever',
      new RegExp(`is not an integer >= 1; using ${DEFAULT_LEDGER_LIMITS.maxIdleMs}`),
    ],
    ['FORKWATCH_LEDGER_RECENT_IDS', '1000000', new RegExp(`from 1 to 10000; using ${DEFAULT_LEDGER_LIMITS.recentIds}`)],
    ['FORKWATCH_PROPAGATE_CONTEXT', 'off', /FORKWATCH_PROPAGATE_CONTEXT="off" is not a boolean.*; using true/],
    ['FORKWATCH_START_SDK', 'auto', /FORKWATCH_START_SDK="auto" is not a boolean.*; using true/],
  ])('%s=%j: one diagnostic, default kept', (name, value, message) => {
    const config = readRegisterEnv({ [name]: value });
    expect(config.diagnostics).toHaveLength(1);
    expect(config.diagnostics[0]).toMatch(message);
    expect(config.instrumentation).toEqual({});
    expect(config.startSdk).toBe(true);
  });

  test('several bad values: one diagnostic each, good values beside them still apply', () => {
    const config = readRegisterEnv({
      FORKWATCH_CODEC: 'nope',
      FORKWATCH_VERDICT_TIMEOUT_MS: 'soon',
      FORKWATCH_LEDGER_RECENT_IDS: '32',
      FORKWATCH_ON_FORK: 'abort',
    });
    expect(config.diagnostics).toHaveLength(2);
    expect(config.diagnostics.join('\n')).toMatch(/FORKWATCH_CODEC/);
    expect(config.diagnostics.join('\n')).toMatch(/FORKWATCH_VERDICT_TIMEOUT_MS/);
    expect(config.instrumentation).toEqual({ onFork: 'abort', ledger: { recentIds: 32 } });
  });
});

describe('OTEL_* variables', () => {
  test('OTEL_SDK_DISABLED', () => {
    expect(readRegisterEnv({ OTEL_SDK_DISABLED: 'true' }).sdkDisabled).toBe(true);
    expect(readRegisterEnv({ OTEL_SDK_DISABLED: 'TRUE' }).sdkDisabled).toBe(true);
    expect(readRegisterEnv({ OTEL_SDK_DISABLED: 'false' }).sdkDisabled).toBe(false);
    const bad = readRegisterEnv({ OTEL_SDK_DISABLED: 'disabled' });
    expect(bad.sdkDisabled).toBe(false);
    expect(bad.diagnostics).toEqual([
      expect.stringMatching(/OTEL_SDK_DISABLED="disabled" is not a boolean.*; using false/),
    ]);
  });

  test('OTEL_METRICS_EXPORTER: lists, none, unknown entries', () => {
    expect(readRegisterEnv({ OTEL_METRICS_EXPORTER: 'otlp' }).metricsExporters).toEqual(['otlp']);
    expect(readRegisterEnv({ OTEL_METRICS_EXPORTER: 'Prometheus, otlp ,console,otlp' }).metricsExporters).toEqual([
      'prometheus',
      'otlp',
      'console',
    ]);
    expect(readRegisterEnv({ OTEL_METRICS_EXPORTER: 'none' })).toMatchObject({ metricsExporters: [], diagnostics: [] });

    const mixed = readRegisterEnv({ OTEL_METRICS_EXPORTER: 'prometheus,statsd' });
    expect(mixed.metricsExporters).toEqual(['prometheus']);
    expect(mixed.diagnostics).toEqual([
      'OTEL_METRICS_EXPORTER: "statsd": unknown exporter (known: prometheus, otlp, console, none); left out',
    ]);

    const unknown = readRegisterEnv({ OTEL_METRICS_EXPORTER: 'promethues' });
    expect(unknown.metricsExporters).toEqual(['prometheus']);
    expect(unknown.diagnostics).toEqual([expect.stringMatching(/"promethues": unknown exporter.*; using prometheus$/)]);

    const twoUnknown = readRegisterEnv({ OTEL_METRICS_EXPORTER: 'a,b' });
    expect(twoUnknown.metricsExporters).toEqual(['prometheus']);
    expect(twoUnknown.diagnostics).toEqual([
      expect.stringMatching(/"a".*left out$/),
      expect.stringMatching(/"b".*using prometheus$/),
    ]);

    const noneAndMore = readRegisterEnv({ OTEL_METRICS_EXPORTER: 'none,otlp' });
    expect(noneAndMore.metricsExporters).toEqual([]);
    expect(noneAndMore.diagnostics).toEqual([expect.stringMatching(/names "none" beside other exporters; using none/)]);
  });

  test('OTEL_TRACES_EXPORTER: none by default, otlp when an OTLP endpoint is configured, explicit values as given', () => {
    expect(readRegisterEnv({}).tracesExporters).toEqual([]);
    expect(readRegisterEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracesExporters).toEqual(['otlp']);
    expect(
      readRegisterEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }).tracesExporters,
    ).toEqual(['otlp']);
    expect(
      readRegisterEnv({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' }).tracesExporters,
    ).toEqual([]);
    expect(readRegisterEnv({ OTEL_TRACES_EXPORTER: 'zipkin,console' }).tracesExporters).toEqual(['zipkin', 'console']);
    expect(
      readRegisterEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracesExporters,
    ).toEqual([]);
    const jaeger = readRegisterEnv({ OTEL_TRACES_EXPORTER: 'jaeger' });
    expect(jaeger.tracesExporters).toEqual([]);
    expect(jaeger.diagnostics).toEqual([
      expect.stringMatching(/OTEL_TRACES_EXPORTER: "jaeger": unknown exporter.*; using none$/),
    ]);
  });

  test('OTEL_LOGS_EXPORTER: none by default; console is refused (stdout), with a reason', () => {
    expect(readRegisterEnv({}).logsExporters).toEqual([]);
    expect(readRegisterEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).logsExporters).toEqual(['otlp']);
    expect(readRegisterEnv({ OTEL_LOGS_EXPORTER: 'otlp' }).logsExporters).toEqual(['otlp']);
    const console = readRegisterEnv({ OTEL_LOGS_EXPORTER: 'console,otlp' });
    expect(console.logsExporters).toEqual(['otlp']);
    expect(console.diagnostics).toEqual([
      expect.stringMatching(/OTEL_LOGS_EXPORTER: "console": .*writes to stdout.*; left out$/),
    ]);
    expect(readRegisterEnv({ OTEL_LOGS_EXPORTER: 'console' }).diagnostics).toEqual([
      expect.stringMatching(/stdout.*; using none$/),
    ]);
  });

  test('OTEL_EXPORTER_PROMETHEUS_HOST and _PORT', () => {
    expect(
      readRegisterEnv({ OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1', OTEL_EXPORTER_PROMETHEUS_PORT: '9100' }).prometheus,
    ).toEqual({
      host: '127.0.0.1',
      port: 9100,
    });
    for (const bad of ['http', '0', '65536', '94 64', '-1']) {
      const config = readRegisterEnv({ OTEL_EXPORTER_PROMETHEUS_PORT: bad });
      expect(config.prometheus.port).toBe(9464);
      expect(config.diagnostics).toEqual([
        `OTEL_EXPORTER_PROMETHEUS_PORT=${JSON.stringify(bad)} is not an integer from 1 to 65535; using 9464`,
      ]);
    }
  });

  test('OTEL_LOG_LEVEL', () => {
    expect(readRegisterEnv({ OTEL_LOG_LEVEL: 'DEBUG' }).logLevel).toBe('debug');
    expect(readRegisterEnv({ OTEL_LOG_LEVEL: 'none' }).logLevel).toBe('none');
    const bad = readRegisterEnv({ OTEL_LOG_LEVEL: 'chatty' });
    expect(bad.logLevel).toBe('warn');
    expect(bad.diagnostics).toHaveLength(1);
  });

  test('the function is pure: it reads only the object it is given', () => {
    const env = Object.freeze({ OTEL_METRICS_EXPORTER: 'otlp', FORKWATCH_CODEC: 'integer' });
    expect(readRegisterEnv(env)).toEqual(readRegisterEnv({ ...env }));
    expect(readRegisterEnv(env).metricsExporters).toEqual(['otlp']);
  });
});
