/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The published JSON Schema of the pack config (schema/pack-config.schema.json): committed as pack/config/schema.ts
 * generates it, a valid draft 2020-12 schema, and in agreement with resolveConfig on what a config may say.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../pack/config/config';
import { resolveConfig } from '../../pack/config/resolve';
import { configSchema } from '../../pack/config/schema';

const committed = JSON.parse(readFileSync(join(__dirname, '../../schema/pack-config.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true, strict: true, strictTypes: false }).compile(committed);
const schemaSays = (config: unknown) => validate(config);
const resolveSays = (config: unknown) => {
  try {
    resolveConfig(config as never);
    return true;
  } catch {
    return false;
  }
};

describe('schema/pack-config.schema.json', () => {
  test('is what pack/config/schema.ts generates (npm run alerts)', () => {
    expect(committed).toEqual(configSchema());
  });

  test('package.json publishes it', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8'));
    expect(pkg.exports['./pack-config.schema.json']).toBe('./schema/pack-config.schema.json');
    expect(pkg.files).toContain('schema/*.json');
  });

  const valid: [string, unknown][] = [
    ['nothing (the defaults)', {}],
    ['the defaults written out', JSON.parse(JSON.stringify(DEFAULT_CONFIG))],
    ['a schema reference', { $schema: './node_modules/forkwatch/schema/pack-config.schema.json' }],
    [
      'a two-cluster config with tuned thresholds',
      {
        selector: 'job=~"mcp-.*"',
        aggregationLabels: ['k8s_cluster'],
        clusterLabel: 'k8s_cluster',
        grafanaUrl: 'https://grafana.example.org',
        alerts: { ForkwatchServerEventsWithoutListener: { share: 0.02 }, ForkwatchForksDetected: { for: '5m' } },
        kubernetes: { podSelector: { app: 'mcp' } },
        otelCollector: { resourceAttributes: { k8s_cluster: 'k8s.cluster.name' } },
      },
    ],
  ];
  const invalid: [string, unknown][] = [
    ['an unknown key', { selecter: 'job="x"' }],
    ['an unknown nested key', { alerts: { ForkwatchForksDetected: { windw: '5m' } } }],
    ['aggregationLabels as a string', { aggregationLabels: 'cluster' }],
    ['a share above 1', { alerts: { ForkwatchServerUnknownCursors: { share: 5 } } }],
    ['a window in words', { rateWindow: 'five minutes' }],
    ['an objective in percent', { clientResumeObjective: 99.5 }],
    [
      'a burn window without its traffic floor',
      { burnWindows: [{ long: '1h', short: '5m', factor: 14.4, for: '2m', severity: 'page' }] },
    ],
    ['an unknown trace backend', { traceSearch: { backend: 'zipkin' } }],
    ['a label of a number', { kubernetes: { labels: { team: 3 } } }],
  ];

  test.each(valid)('accepts %s, as resolveConfig does', (_, config) => {
    expect(schemaSays(config), JSON.stringify(validate.errors)).toBe(true);
    expect(resolveSays(config)).toBe(true);
  });

  test.each(invalid)('refuses %s, as resolveConfig does', (_, config) => {
    expect(schemaSays(config)).toBe(false);
    expect(resolveSays(config)).toBe(false);
  });

  test('every alert threshold entry carries its reason', () => {
    const alerts = committed.properties.alerts.properties as Record<string, { description?: string }>;
    expect(Object.keys(alerts).sort()).toEqual(Object.keys(DEFAULT_CONFIG.alerts).sort());
    for (const [name, entry] of Object.entries(alerts)) expect(entry.description, name).toMatch(/`for`|\d/);
  });

  test('every key has a description', () => {
    for (const [key, value] of Object.entries(committed.properties as Record<string, { description?: string }>)) {
      if (key === '$schema') continue;
      expect(value.description, key).toMatch(/\w/);
    }
  });
});
