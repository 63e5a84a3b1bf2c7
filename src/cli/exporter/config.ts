/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The exporter's config file: named modules, as blackbox_exporter's. JSON (which YAML parsers also read), so the
 * exporter needs no YAML dependency. Secrets never sit in the file or in a URL: header values and tokens name an
 * environment variable or a file, read at each probe (a rotated token file is picked up without a restart).
 *
 * A module that carries credentials (anything read from the environment or a file) must name its `targets`
 * (targets.ts): its credentials go only there. Header values written in the file are for non-secrets, so a
 * secret-looking header (Authorization, Cookie, a token…) written there is refused.
 *
 *   { "modules": { "default": { "timeoutMs": 5000, "resumes": 10, "deadlineMs": 30000,
 *       "targets": ["https://mcp.example.com"],
 *       "bearer": { "file": "/run/secrets/mcp-token" },
 *       "headers": { "X-Tenant": { "value": "blue" }, "X-Api-Key": { "env": "MCP_API_KEY" } },
 *       "notifyTool": "notify", "streams": ["request", "standalone"] } },
 *     "concurrency": 4 }
 */
import { readFileSync } from 'node:fs';
import { DEFAULTS, RESUMABLE_PROTOCOL_VERSIONS } from '../probe/options';
import { STREAM_KINDS, type StreamKind } from '../probe/report';
import { type TargetPattern, parseTargetPattern } from './targets';

/** A value the exporter reads when it probes: from the environment or a file; `value` only for non-secrets. */
export type SecretSource = { env: string } | { file: string } | { value: string };

export interface ModuleConfig {
  timeoutMs: number;
  resumes: number;
  protocolVersion: string;
  streams: StreamKind[];
  /** Bound on the whole probe (also capped by Prometheus's scrape timeout). */
  deadlineMs: number;
  /** Where its probes may go; undefined (only for a module without credentials): anywhere. */
  targets?: TargetPattern[];
  bearer?: SecretSource;
  headers: Record<string, SecretSource>;
  notifyTool?: string;
  notifyArgs?: Record<string, unknown>;
}

export interface ExporterConfig {
  modules: Record<string, ModuleConfig>;
  /** Probes running at once; more wait in a queue of `queue`, beyond which the exporter answers 503. */
  concurrency: number;
  queue: number;
}

export const EXPORTER_DEFAULTS = { concurrency: 4, queue: 16, deadlineMs: 30_000, maxResumes: 100 };

export class ConfigError extends Error {}

export function loadConfig(path: string): ExporterConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path} is not JSON${jsonErrorPlace(text, (error as Error).message)}`);
  }
  return parseConfig(raw);
}

/**
 * Where JSON.parse stopped, as line and column: never its message, which quotes the text around the error, and
 * that text may be a secret the file should not hold.
 */
function jsonErrorPlace(text: string, message: string): string {
  const lineColumn = /line (\d+) column (\d+)/.exec(message);
  if (lineColumn) return ` (line ${lineColumn[1]}, column ${lineColumn[2]})`;
  const position = /position (\d+)/.exec(message);
  if (position) {
    const before = text.slice(0, Number(position[1])).split('\n');
    return ` (line ${before.length}, column ${before.at(-1)!.length + 1})`;
  }
  return /end of (JSON|data) input/i.test(message) ? ' (it ends too soon)' : '';
}

export function parseConfig(raw: unknown): ExporterConfig {
  const root = object(raw, 'the config');
  allowOnly(root, ['modules', 'concurrency', 'queue'], 'the config');
  const modules = object(root.modules, 'modules');
  const names = Object.keys(modules);
  if (names.length === 0) throw new ConfigError('modules: name at least one module');
  return {
    // No prototype: a module name from a request (`__proto__`, `toString`) finds nothing but configured modules.
    modules: Object.assign(
      Object.create(null) as Record<string, ModuleConfig>,
      Object.fromEntries(names.map(name => [name, parseModule(modules[name], `modules.${name}`)])),
    ),
    concurrency: int(root.concurrency, 'concurrency', EXPORTER_DEFAULTS.concurrency, 1, 256),
    queue: int(root.queue, 'queue', EXPORTER_DEFAULTS.queue, 0, 10_000),
  };
}

function parseModule(raw: unknown, where: string): ModuleConfig {
  const m = object(raw, where);
  allowOnly(
    m,
    [
      'timeoutMs',
      'resumes',
      'protocolVersion',
      'streams',
      'deadlineMs',
      'targets',
      'bearer',
      'headers',
      'notifyTool',
      'notifyArgs',
    ],
    where,
  );
  const protocolVersion = m.protocolVersion ?? DEFAULTS.protocolVersion;
  if (
    typeof protocolVersion !== 'string' ||
    !(RESUMABLE_PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)
  )
    throw new ConfigError(`${where}.protocolVersion: one of ${RESUMABLE_PROTOCOL_VERSIONS.join(', ')}`);
  const streams = m.streams ?? [...STREAM_KINDS];
  if (
    !Array.isArray(streams) ||
    streams.length === 0 ||
    !streams.every(k => (STREAM_KINDS as readonly unknown[]).includes(k))
  )
    throw new ConfigError(`${where}.streams: a non-empty list of ${STREAM_KINDS.join(', ')}`);
  const headers = object(m.headers ?? {}, `${where}.headers`);
  const out: ModuleConfig = {
    timeoutMs: int(m.timeoutMs, `${where}.timeoutMs`, DEFAULTS.timeoutMs, 1, 600_000),
    resumes: int(m.resumes, `${where}.resumes`, DEFAULTS.resumes, 1, EXPORTER_DEFAULTS.maxResumes),
    protocolVersion,
    streams: [...new Set(streams as StreamKind[])],
    deadlineMs: int(m.deadlineMs, `${where}.deadlineMs`, EXPORTER_DEFAULTS.deadlineMs, 100, 3_600_000),
    headers: Object.fromEntries(
      Object.entries(headers).map(([name, source]) => {
        if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
          throw new ConfigError(`${where}.headers: bad name ${JSON.stringify(name.slice(0, 100))}`);
        const value = secretSource(source, `${where}.headers.${name}`, !SECRET_HEADER.test(name));
        if ('value' in value && !/^[\t\x20-\x7e\x80-\xff]*$/.test(value.value))
          throw new ConfigError(`${where}.headers.${name}: a line break or a control character in the value`);
        return [name.toLowerCase(), value];
      }),
    ),
  };
  if (m.bearer !== undefined) out.bearer = secretSource(m.bearer, `${where}.bearer`, false);
  if (m.targets !== undefined) out.targets = targetPatterns(m.targets, `${where}.targets`);
  const credentials = carriedCredentials(out);
  if (credentials.length > 0 && out.targets === undefined)
    throw new ConfigError(
      `${where}: carries credentials (${credentials.join(', ')}) but names no targets: list where they may go, as in "targets": ["https://mcp.example.com"]`,
    );
  if (m.notifyTool !== undefined) {
    if (typeof m.notifyTool !== 'string' || m.notifyTool === '')
      throw new ConfigError(`${where}.notifyTool: a tool name`);
    out.notifyTool = m.notifyTool;
  }
  if (m.notifyArgs !== undefined) out.notifyArgs = object(m.notifyArgs, `${where}.notifyArgs`);
  return out;
}

/** Header names whose values are secrets: never written in the file. */
const SECRET_HEADER = /^(authorization|proxy-authorization|cookie)$|token|secret|passw|api[-_]?key|auth/i;

function secretSource(raw: unknown, where: string, literalAllowed: boolean): SecretSource {
  const s = object(raw, where);
  const keys = Object.keys(s);
  const allowed = literalAllowed ? ['env', 'file', 'value'] : ['env', 'file'];
  if (keys.length === 1 && keys[0] === 'value' && !literalAllowed)
    throw new ConfigError(
      `${where}: a secret is never written in the config file: name an environment variable ({"env": "…"}) or a file ({"file": "…"})`,
    );
  if (keys.length !== 1 || !allowed.includes(keys[0]!) || typeof s[keys[0]!] !== 'string' || s[keys[0]!] === '')
    throw new ConfigError(`${where}: one of ${allowed.map(k => `{"${k}": "…"}`).join(', ')}`);
  return { [keys[0]!]: s[keys[0]!] } as SecretSource;
}

function targetPatterns(raw: unknown, where: string): TargetPattern[] {
  if (!Array.isArray(raw) || raw.length === 0)
    throw new ConfigError(`${where}: a non-empty list of origins or URL patterns`);
  return raw.map((text, i) => {
    if (typeof text !== 'string') throw new ConfigError(`${where}[${i}]: a string`);
    const pattern = parseTargetPattern(text);
    if (typeof pattern === 'string') throw new ConfigError(`${where}[${i}]: ${pattern}`);
    return pattern;
  });
}

/** What a module sends that came from the environment or a file (names only). */
function carriedCredentials(module: ModuleConfig): string[] {
  const carried = Object.entries(module.headers).flatMap(([name, source]) => ('value' in source ? [] : [name]));
  return module.bearer !== undefined ? ['bearer', ...carried] : carried;
}

/** The module a request names, if the config has it. */
export function findModule(config: ExporterConfig, name: string): ModuleConfig | undefined {
  return Object.hasOwn(config.modules, name) ? config.modules[name] : undefined;
}

/** Reads a secret now; throws a message without the secret when it is missing. */
export function readSecret(source: SecretSource, env: NodeJS.ProcessEnv = process.env): string {
  if ('value' in source) return source.value;
  if ('env' in source) {
    const value = env[source.env];
    if (value === undefined || value === '') throw new ConfigError(`environment variable ${source.env} is not set`);
    return value;
  }
  try {
    return readFileSync(source.file, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(`cannot read ${source.file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** The request headers of a module, secrets read now. */
export function moduleHeaders(module: ModuleConfig, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, source] of Object.entries(module.headers)) headers[name] = readSecret(source, env);
  if (module.bearer !== undefined) headers.authorization = `Bearer ${readSecret(module.bearer, env)}`;
  return headers;
}

function object(raw: unknown, where: string): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(`${where}: an object`);
  return raw as Record<string, unknown>;
}

function allowOnly(raw: Record<string, unknown>, keys: string[], where: string): void {
  for (const key of Object.keys(raw))
    if (!keys.includes(key))
      throw new ConfigError(`${where}: unknown field ${JSON.stringify(key.slice(0, 100))} (known: ${keys.join(', ')})`);
}

function int(raw: unknown, where: string, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < min || raw > max)
    throw new ConfigError(`${where}: an integer from ${min} to ${max}`);
  return raw;
}
