/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reads a Prometheus text exposition (what a real scrape returns) into its metric families.
 *
 * Shared by the rule lint (test/alerts) and the dashboard checks: "the metric names forkwatch exports" always come
 * from a real scrape of the instrumented lab, never from a hand-written list.
 */

export type MetricType =
  | 'counter'
  | 'gauge'
  | 'histogram'
  | 'summary'
  | 'untyped'
  | 'info'
  | 'stateset'
  | 'gaugehistogram'
  | 'unknown';

export interface MetricFamily {
  /** From the `# TYPE` line. */
  type: MetricType;
  help?: string;
  unit?: string;
  /** Series names as scraped: the family name, or `_bucket`/`_sum`/`_count` (histograms), `_total` etc. */
  seriesNames: Set<string>;
  /** Every label name seen on the family's samples, with every value seen (`le` included for histograms). */
  labels: Map<string, Set<string>>;
}

/** Suffixes a family's samples may carry, by type (text format 0.0.4 and OpenMetrics). */
const SUFFIXES: Record<string, readonly string[]> = {
  counter: ['', '_total', '_created'],
  histogram: ['_bucket', '_sum', '_count', '_created'],
  gaugehistogram: ['_bucket', '_gsum', '_gcount'],
  summary: ['', '_sum', '_count', '_created'],
};

/**
 * Parses exposition text (or, if given an http(s) URL, fetches it first) into a map from family name (the name on
 * the `# TYPE` line) to its type, help, unit, sample series names and label values.
 */
export async function scrapeMetricFamilies(textOrUrl: string): Promise<Map<string, MetricFamily>> {
  let text = textOrUrl;
  if (/^https?:\/\//.test(textOrUrl)) {
    const res = await fetch(textOrUrl);
    if (!res.ok) throw new Error(`scrape ${textOrUrl}: HTTP ${res.status}`);
    text = await res.text();
  }
  return parseMetricFamilies(text);
}

/** Synchronous parser behind scrapeMetricFamilies. Throws on a sample that belongs to no `# TYPE`d family. */
export function parseMetricFamilies(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const family = (name: string): MetricFamily => {
    let f = families.get(name);
    if (!f) {
      f = { type: 'untyped', seriesNames: new Set(), labels: new Map() };
      families.set(name, f);
    }
    return f;
  };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line === '# EOF') continue;
    const meta = /^#\s+(TYPE|HELP|UNIT)\s+(\S+)\s*(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      const f = family(name);
      if (kind === 'TYPE') f.type = rest.trim() as MetricType;
      else if (kind === 'HELP') f.help = rest;
      else f.unit = rest.trim();
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+\S+/.exec(line);
    if (!sample) throw new Error(`unparseable exposition line: ${line}`);
    const seriesName = sample[1] as string;
    const owner = familyOf(seriesName, families);
    if (!owner) throw new Error(`sample ${seriesName} belongs to no # TYPE'd family`);
    owner.seriesNames.add(seriesName);
    for (const [label, value] of parseLabels(sample[2] ?? '')) {
      let values = owner.labels.get(label);
      if (!values) {
        values = new Set();
        owner.labels.set(label, values);
      }
      values.add(value);
    }
  }
  return families;
}

/** Every series name the families can produce as scraped, mapped to the type of their family. */
export function seriesNamesByType(families: Map<string, MetricFamily>): Map<string, MetricType> {
  const out = new Map<string, MetricType>();
  for (const [name, f] of families) {
    for (const s of f.seriesNames) out.set(s, f.type);
    // A family with no samples yet still names its series.
    if (f.seriesNames.size === 0) for (const suffix of SUFFIXES[f.type] ?? ['']) out.set(name + suffix, f.type);
  }
  return out;
}

function familyOf(seriesName: string, families: Map<string, MetricFamily>): MetricFamily | undefined {
  const exact = families.get(seriesName);
  if (exact) return exact;
  for (const [name, f] of families) {
    for (const suffix of SUFFIXES[f.type] ?? []) {
      if (suffix !== '' && seriesName === name + suffix) return f;
    }
  }
  return undefined;
}

function parseLabels(block: string): [string, string][] {
  const out: [string, string][] = [];
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(block); m; m = re.exec(block)) {
    out.push([m[1] as string, (m[2] as string).replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\')]);
  }
  return out;
}

/** Value of the first sample of `name` whose labels include `labels`; undefined if there is none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return matchingSamples(text, name, labels)[0]?.value;
}

/**
 * Like `sample`, but throws when several series match with different values, so the answer never depends on the
 * order of series (name every label that tells them apart). Prefer it in new tests.
 */
export function sampleOne(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = matchingSamples(text, name, labels);
  if (new Set(found.map(f => f.value)).size > 1) {
    throw new Error(
      `sampleOne(${name}, ${JSON.stringify(labels)}) is ambiguous:\n${found.map(f => f.line).join('\n')}`,
    );
  }
  return found[0]?.value;
}

function matchingSamples(
  text: string,
  name: string,
  labels: Record<string, string>,
): { line: string; value: number }[] {
  const found: { line: string; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    found.push({ line, value: Number(line.slice(line.lastIndexOf(' ') + 1)) });
  }
  return found;
}
