/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * "No session id, event id or URL is ever a label": every forkwatch family in real scrapes (the client app and both
 * servers of a fork-lab run that resumes, forks and replays, and a per-request run that re-issues and listens) carries exactly the label names of its contract in
 * src/shared/names.ts, and every label value is one the contract enumerates, so no id or URL can pass as a value either.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { METRICS, METRIC_SPECS, type MetricSpec } from '../src/shared/names';
import { perRequestScrape } from './per-request/support';
import { type LabReport, runLabScenario } from './support/lab';
import { parseMetricFamilies, sampleOne } from './support/scrape';

/** Labels the OpenTelemetry Prometheus exporter adds to every series (the instrumentation scope), and `le`. */
const EXPORTER_LABELS = new Set(['otel_scope_name', 'otel_scope_version', 'otel_scope_schema_url', 'le']);
const FORBIDDEN_NAME = /session|event_?id|cursor|url|uri|host|path|trace|span/i;

let scrapes: [string, string][];
beforeAll(async () => {
  const report: LabReport = await runLabScenario('live-fork-integer-ids');
  scrapes = [
    ['client app', report.metrics],
    ...Object.entries(report.servers ?? {}).map(([n, s]) => [`server ${n}`, s.metrics] as [string, string]),
    // The 2026-07-28 client histograms record only per-request traffic: a real run of it (a re-issue, a listen gap).
    ['per-request app', await perRequestScrape()],
  ];
}, 180_000);

const specFor = (family: string): MetricSpec | undefined => METRIC_SPECS.find(s => s.prometheusName === family);

describe('the label contract', () => {
  test('the contract itself names no id, cursor, URL or trace label', () => {
    for (const spec of METRIC_SPECS)
      for (const label of Object.keys(spec.labels)) expect(label, spec.prometheusName).not.toMatch(FORBIDDEN_NAME);
  });

  test('the scrapes hold the client, both servers and the per-request app, with every family of the contract among them', () => {
    expect(scrapes.map(([where]) => where)).toEqual(['client app', 'server A', 'server B', 'per-request app']);
    const seen = new Set(scrapes.flatMap(([, text]) => [...parseMetricFamilies(text).keys()]));
    // Observed only on a resume that continues a dense sequence; this run forks instead (its labels are none: {}).
    const notObserved = new Set<string>([
      METRICS.clientResumeSkippedEvents.prometheusName,
      // Recorded when a run of empty reconnects ends (test/revived/reconnect-storms.test.ts records one); this lab
      // has no reconnect storm.
      METRICS.clientEmptyReconnectStreak.prometheusName,
    ]);
    for (const spec of METRIC_SPECS) {
      if (!notObserved.has(spec.prometheusName)) expect(seen.has(spec.prometheusName), spec.prometheusName).toBe(true);
    }
    expect(Object.keys(METRICS.clientResumeSkippedEvents.labels)).toEqual([]);
  });

  test('every forkwatch family carries exactly its contract label names, with values the contract lists', () => {
    let checked = 0;
    for (const [where, text] of scrapes) {
      for (const [name, family] of parseMetricFamilies(text)) {
        if (!name.startsWith('forkwatch_')) continue;
        const spec = specFor(name);
        expect(spec, `${where}: ${name} is not in src/shared/names.ts`).toBeDefined();
        const own = [...family.labels.keys()].filter(l => !EXPORTER_LABELS.has(l)).sort();
        expect(own, `${where}: ${name}`).toEqual(Object.keys(spec!.labels).sort());
        for (const [label, values] of family.labels) {
          if (EXPORTER_LABELS.has(label)) continue;
          for (const value of values)
            expect(spec!.labels[label], `${where}: ${name}{${label}="${value}"}`).toContain(value);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(METRIC_SPECS.length - 1);
  });

  test('the lab run recorded real resumes and forks, so the histograms above carry observations, not only zeros', () => {
    const client = parseMetricFamilies(scrapes[0]![1]);
    expect(client.get('forkwatch_client_resume_gap_seconds')?.type).toBe('histogram');
    expect(scrapes[0]![1]).toMatch(/^forkwatch_client_forks_total\{[^}]*reason="id_regressed"[^}]*\} [1-9]/m);
  });

  test('the per-request run recorded a re-issue delay and a listen gap: its histograms carry observations', () => {
    const text = scrapes[3]![1];
    for (const spec of [METRICS.clientReissueDelaySeconds, METRICS.clientListenGapSeconds])
      expect(sampleOne(text, `${spec.prometheusName}_count`), spec.prometheusName).toBe(1);
  });
});
