/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A user's config overlaid on DEFAULT_CONFIG. Objects merge key by key at every depth, so a user names only what
 * differs; arrays (aggregationLabels, burnWindows) replace. Every problem is reported, one line each, in one error.
 */
import { DEFAULT_CONFIG, type ForkwatchConfig } from './config';
import { isDuration } from './units';

type DeepPartial<T> = T extends Array<infer _> ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;
export type UserConfig = DeepPartial<ForkwatchConfig>;

/** Maps whose keys are the user's (labels, attributes): any key, string values. */
const OPEN_MAPS = new Set(['kubernetes.labels', 'kubernetes.podSelector', 'otelCollector.resourceAttributes']);
/** Fields that are durations (checked as such); every `for`, `window`, `lookback`, `long`, `short` is one too. */
const DURATION_KEYS = new Set([
  'sloWindow',
  'for',
  'window',
  'lookback',
  'long',
  'short',
  'rateWindow',
  'interval',
  'sharedStoreReplayLag',
  'blindFor',
]);
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);

/** Merges `user` into a copy of `base`, collecting unknown keys and type mismatches against the defaults' shape. */
function merge(base: unknown, user: unknown, path: string, problems: string[], unknown: string[]): unknown {
  /** Keeps the default where the user's value has the wrong shape (the error is reported, nothing half-merged). */
  const refuse = (problem: string) => {
    problems.push(problem);
    return base;
  };
  if (OPEN_MAPS.has(path)) {
    if (!isObject(user)) return refuse(`${path}: expected an object of strings, got ${kind(user)}`);
    for (const [k, v] of Object.entries(user))
      if (typeof v !== 'string') problems.push(`${path}.${k}: expected a string, got ${kind(v)}`);
    return { ...(base as object), ...user };
  }
  if (isObject(base)) {
    if (!isObject(user)) return refuse(`${path}: expected an object, got ${kind(user)}`);
    const out: Record<string, unknown> = { ...base };
    for (const [k, v] of Object.entries(user)) {
      const at = path ? `${path}.${k}` : k;
      if (!(k in base)) unknown.push(at);
      else out[k] = merge(base[k], v, at, problems, unknown);
    }
    return out;
  }
  if (Array.isArray(base)) {
    if (!Array.isArray(user)) return refuse(`${path}: expected an array, got ${kind(user)}`);
    const item = base[0];
    return user.map((v, i) => {
      // An array item is whole: a burn window names every field (none is taken from a default window).
      if (isObject(item) && isObject(v))
        for (const k of Object.keys(item)) if (!(k in v)) problems.push(`${path}[${i}]: missing ${k}`);
      return item === undefined ? v : merge(item, v, `${path}[${i}]`, problems, unknown);
    });
  }
  if (typeof user !== typeof base) return refuse(`${path}: expected a ${typeof base}, got ${kind(user)}`);
  return user;
}

/** The rules' own constraints, on the merged config. */
function check(config: ForkwatchConfig, problems: string[]): void {
  const walk = (value: unknown, path: string, key: string) => {
    if (DURATION_KEYS.has(key) && typeof value === 'string' && !isDuration(value))
      problems.push(`${path}: windows are one number and unit (5m, 1h, 3d), not ${JSON.stringify(value)}`);
    if (isObject(value)) for (const [k, v] of Object.entries(value)) walk(v, path ? `${path}.${k}` : k, k);
    if (Array.isArray(value)) for (const [i, v] of value.entries()) walk(v, `${path}[${i}]`, key);
  };
  walk(config, '', '');
  const labels = Array.isArray(config.aggregationLabels) ? config.aggregationLabels : [];
  if (labels.length > 0 && !labels.includes(config.clusterLabel))
    problems.push(`clusterLabel ${config.clusterLabel} must be one of aggregationLabels (${labels.join(', ')})`);
  if (labels.some(l => typeof l !== 'string' || l === 'job' || l === 'instance' || !LABEL_NAME.test(l)))
    problems.push('aggregationLabels are label names other than job and instance');
  if (config.runbookUrlPattern !== '' && !config.runbookUrlPattern.includes('%s'))
    problems.push('runbookUrlPattern needs a %s for the alert name');
  const needsBase = config.runbookUrlPattern === '' || config.runbooksIndexUrl === '';
  if (needsBase && !/^[a-z][a-z0-9+.-]*:\/\/\S+\/$/i.test(config.runbookBaseUrl))
    problems.push(
      `runbookBaseUrl: the URL of the folder that holds <AlertName>.md, ending in /, not ${JSON.stringify(config.runbookBaseUrl)}`,
    );
  for (const key of ['clientResumeObjective', 'serverDeliveryObjective'] as const) {
    const o = config[key];
    if (!(o > 0 && o < 1)) problems.push(`${key}: SLO objectives are between 0 and 1, not ${o}`);
  }
  for (const [name, t] of Object.entries(config.alerts)) {
    const values = t as unknown as Record<string, unknown>;
    for (const key of ['share', 'quantile'])
      if (typeof values[key] === 'number' && !((values[key] as number) > 0 && (values[key] as number) < 1))
        problems.push(`alerts.${name}.${key}: a share between 0 and 1, not ${values[key]}`);
  }
  config.burnWindows.forEach((w, i) => {
    if (!(w.factor > 0)) problems.push(`burnWindows[${i}].factor: a positive number, not ${w.factor}`);
    if (w.severity !== 'page' && w.severity !== 'ticket')
      problems.push(`burnWindows[${i}].severity: page or ticket, not ${JSON.stringify(w.severity)}`);
  });
  const backends = ['tempo', 'jaeger', 'none'];
  if (!backends.includes(config.traceSearch.backend))
    problems.push(
      `traceSearch.backend: one of ${backends.join(', ')}, not ${JSON.stringify(config.traceSearch.backend)}`,
    );
  if (config.traceSearch.backend === 'jaeger' && !/^https?:\/\//.test(config.traceSearch.target))
    problems.push(
      `traceSearch.target: the Jaeger UI's base URL (http or https), not ${JSON.stringify(config.traceSearch.target)}`,
    );
}

/** The defaults overlaid with a user's config; throws a ConfigError (one line per problem) on a config the rules cannot honour. */
export function resolveConfig(user: UserConfig = {}): ForkwatchConfig {
  const problems: string[] = [];
  const unknown: string[] = [];
  if (!isObject(user)) throw new ConfigError([`the config is a JSON object, not ${kind(user)}`]);
  // A config file may name its schema (editors read it); it is no setting.
  const { $schema: _, ...settings } = user as UserConfig & { $schema?: unknown };
  const config = merge(DEFAULT_CONFIG, settings, '', problems, unknown) as ForkwatchConfig;
  if (unknown.length > 0) problems.unshift(`unknown config keys: ${unknown.join(', ')}`);
  if (problems.length === 0) check(config, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
