/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * How OTLP metric names become Prometheus names behind an OpenTelemetry Collector (`prometheus` and
 * `prometheusremotewrite` exporters) or Prometheus' own OTLP receiver: the naming of `github.com/prometheus/otlptranslator`
 * (`MetricNamer.Build` with metric suffixes, the Collector's default), re-implemented here for the tests because no
 * Collector binary is available and Debian's Prometheus 2.42 predates the OTLP receiver (2.47).
 *
 * Two strategies append suffixes:
 *  - `UnderscoreEscapingWithSuffixes` (Collector default, Prometheus `otlp.translation_strategy` default): the name is
 *    split into tokens at every character outside [a-zA-Z0-9:] (so `_` splits too), the unit suffix is appended unless
 *    it already is one of the tokens, `_total` for monotonic sums, `_ratio` for gauges of unit `1`.
 *  - `NoUTF8EscapingWithSuffixes`: the name is kept and the unit suffix appended unless the name already ends in it.
 */

export type OtlpMetricType =
  | 'gauge'
  | 'monotonic_counter'
  | 'non_monotonic_counter'
  | 'histogram'
  | 'exponential_histogram'
  | 'summary';

const UNIT_MAP: Record<string, string> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  TiBy: 'tibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  TBy: 'terabytes',
  m: 'meters',
  V: 'volts',
  A: 'amperes',
  J: 'joules',
  W: 'watts',
  g: 'grams',
  Cel: 'celsius',
  Hz: 'hertz',
  '1': '',
  '%': 'percent',
};

const PER_UNIT_MAP: Record<string, string> = {
  s: 'second',
  m: 'minute',
  h: 'hour',
  d: 'day',
  w: 'week',
  mo: 'month',
  y: 'year',
};

/** Main and `per_` unit suffixes of a UCUM unit; annotations (`{...}`) give none. */
export function unitSuffixes(unit: string): { main: string; per: string } {
  const [mainPart = '', perPart] = splitOnce(unit, '/');
  let main = '';
  let per = '';
  const mainUnit = mainPart.trim();
  if (mainUnit !== '' && !/[{}]/.test(mainUnit)) main = UNIT_MAP[mainUnit] ?? mainUnit;
  if (perPart !== undefined && perPart !== '') {
    const perUnit = perPart.trim();
    if (perUnit !== '' && !/[{}]/.test(perUnit)) per = PER_UNIT_MAP[perUnit] ?? perUnit;
    if (per !== '') per = `per_${per}`;
  }
  return { main, per };
}

function splitOnce(s: string, sep: string): [string, string?] {
  const i = s.indexOf(sep);
  return i === -1 ? [s] : [s.slice(0, i), s.slice(i + 1)];
}

/** Invalid characters to `_`, runs of `_` collapsed, leading and trailing `_` dropped. */
function cleanUpUnit(unit: string): string {
  return unit
    .replace(/[^a-zA-Z0-9:_]/g, '_')
    .replace(/__+/g, '_')
    .replace(/^_/, '')
    .replace(/_$/, '');
}

/** `UnderscoreEscapingWithSuffixes`. */
export function collectorName(name: string, unit: string, type: OtlpMetricType): string {
  let tokens = name.split(/[^a-zA-Z0-9:]/).filter(t => t !== '');
  const suffixes = unitSuffixes(unit);
  let main = cleanUpUnit(suffixes.main);
  let per = cleanUpUnit(suffixes.per);
  if (tokens.includes(main)) main = '';
  if (per === 'per_') per = '';
  else {
    per = per.replace(/_$/, '');
    if (tokens.includes(per)) per = '';
  }
  if (per !== '') main = main.replace(/_$/, '');
  if (main !== '') tokens.push(main);
  if (per !== '') tokens.push(per);
  if (type === 'monotonic_counter') tokens = [...tokens.filter(t => t !== 'total'), 'total'];
  if (unit === '1' && type === 'gauge') tokens = [...tokens.filter(t => t !== 'ratio'), 'ratio'];
  const joined = tokens.join('_');
  return /^[0-9]/.test(joined) ? `_${joined}` : joined;
}

/** `NoUTF8EscapingWithSuffixes`. */
export function collectorNameUtf8(name: string, unit: string, type: OtlpMetricType): string {
  let result = name;
  const trimSuffix = (suffix: string) => {
    if (result.endsWith(suffix) && result.length > suffix.length + 1)
      result = result.slice(0, result.length - suffix.length - 1);
  };
  const deferred: string[] = [];
  if (unit === '1' && type === 'gauge') {
    trimSuffix('ratio');
    deferred.unshift('_ratio');
  }
  if (type === 'monotonic_counter') {
    trimSuffix('total');
    deferred.unshift('_total');
  }
  const { main, per } = unitSuffixes(unit);
  if (per !== '') {
    trimSuffix(per);
    deferred.unshift(`_${per}`);
  }
  if (main !== '' && !result.endsWith(main)) result = `${result}_${main}`;
  return result + deferred.join('');
}

/** The JS PrometheusExporter (@opentelemetry/exporter-prometheus 0.223.0): no unit suffix, `_total` on counters. */
export function jsExporterName(name: string, type: OtlpMetricType): string {
  const sanitized = name.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_');
  return type === 'monotonic_counter' && !sanitized.endsWith('_total') ? `${sanitized}_total` : sanitized;
}
