/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Command-line options of `forkwatch probe`. */
import { parseArgs } from 'node:util';
import { STREAM_KINDS, type StreamKind } from './report';

/** Protocol versions that have Last-Event-ID resumption, oldest first. */
export const RESUMABLE_PROTOCOL_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25'] as const;
/** The first version without sessions or resumption (SEP-2567, SEP-2575). */
export const FIRST_UNRESUMABLE_VERSION = '2026-07-28';

export interface ProbeOptions {
  url: URL;
  /** Extra request headers, authentication included. */
  headers: Record<string, string>;
  /** Bound on every step: one HTTP exchange, or the wait for a stream's first frame. */
  timeoutMs: number;
  /** Bound on the whole probe, the session's DELETE included (ms); none when absent. */
  deadlineMs?: number;
  /** Repeated resumes over fresh connections (condition 4). */
  resumes: number;
  protocolVersion: string;
  /** Stream kinds to probe (`--streams`); a kind left out is reported not applicable. */
  streams: StreamKind[];
  /** A tool that makes the server send notifications on its standalone stream (`--notify-tool`). */
  notifyTool?: string;
  notifyArgs?: Record<string, unknown>;
  json: boolean;
  promFile?: string;
  pushgateway?: URL;
  pushJob: string;
}

export const DEFAULTS = {
  timeoutMs: 5000,
  deadlineMs: 24_000,
  resumes: 10,
  protocolVersion: '2025-11-25',
  pushJob: 'forkwatch_probe',
};

/** Environment variable read for the bearer token when --bearer is absent: keeps secrets out of `ps`. */
export const TOKEN_ENV = 'FORKWATCH_PROBE_TOKEN';

export const PROBE_USAGE = `Usage: forkwatch probe <url> [options]

Tests whether a streamable-HTTP MCP endpoint resumes sessions without losing messages.

Options:
  --bearer <token>          send Authorization: Bearer <token> (default: $${TOKEN_ENV})
  -H, --header 'Name: v'    extra request header; repeatable
  --timeout <ms>            bound on each exchange (default ${DEFAULTS.timeoutMs}); a frame the server owes at once
                            (a replay, an event just made) is waited for 2 s, or 4x its median answer, within it
  --deadline <ms>           bound on the whole probe, the session's DELETE included (default ${DEFAULTS.deadlineMs})
  --resumes <K>             repeated resumes over fresh connections (default ${DEFAULTS.resumes})
  --protocol-version <v>    version to ask for: ${RESUMABLE_PROTOCOL_VERSIONS.join(', ')} (default ${DEFAULTS.protocolVersion})
  --notify-tool <name>      a tool that makes the server send notifications on its standalone GET stream
  --notify-args <json>      arguments for --notify-tool (a JSON object; default {})
  --streams <kinds>         stream kinds to probe: request,standalone (default both)
  --json                    print the report as JSON
  --prom-file <path>        write Prometheus text format (atomically, for a textfile collector)
  --pushgateway <url>       PUT Prometheus text format to a Pushgateway
  --push-job <name>         Pushgateway job name (default ${DEFAULTS.pushJob})
  -h, --help                show this help

What --notify-tool needs: the standalone GET stream only carries what the server sends on its own, so the probe
needs a tool that makes it send there. Each call must send at least one notification (a logging message, say) to
the session without relatedRequestId, so it goes out on the standalone stream and not on the call's own response,
and answer at once. The probe calls it over new connections (--notify-args are its arguments), twice before it
takes its cursor: a notification is the probe's own marker only if its method and params come again after the
second call. A counter or a time stamp in them is fine, but then the replay is judged on the event ids alone (ids
that continue the cursor, or carry the time they were stored); with opaque ids (UUIDs) the stream is untestable.

Exit codes: 0 resumable, 1 not resumable, 2 could not test (or not applicable: no SSE, protocol ${FIRST_UNRESUMABLE_VERSION}),
            64 usage error. Every failed condition says what was seen and one fix.
`;

export type ParsedProbeArgs =
  | { kind: 'options'; options: ProbeOptions }
  | { kind: 'help' }
  | { kind: 'error'; message: string };

export function parseProbeArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParsedProbeArgs {
  let parsed: ReturnType<typeof parseProbeArgv>;
  try {
    parsed = parseProbeArgv(argv);
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
  return fromParsed(parsed, env);
}

function parseProbeArgv(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      bearer: { type: 'string' },
      header: { type: 'string', short: 'H', multiple: true },
      timeout: { type: 'string' },
      deadline: { type: 'string' },
      resumes: { type: 'string' },
      'protocol-version': { type: 'string' },
      'notify-tool': { type: 'string' },
      'notify-args': { type: 'string' },
      streams: { type: 'string' },
      json: { type: 'boolean' },
      'prom-file': { type: 'string' },
      pushgateway: { type: 'string' },
      'push-job': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function fromParsed(parsed: ReturnType<typeof parseProbeArgv>, env: NodeJS.ProcessEnv): ParsedProbeArgs {
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (positionals.length !== 1) return { kind: 'error', message: 'expected exactly one <url>' };

  const url = parseHttpUrl(positionals[0]!);
  if (url === undefined) return { kind: 'error', message: `not an http(s) URL: ${positionals[0]}` };

  const headers: Record<string, string> = {};
  for (const raw of values.header ?? []) {
    const colon = raw.indexOf(':');
    const name = colon > 0 ? raw.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
      return { kind: 'error', message: `bad header (want 'Name: value'): ${raw}` };
    const value = raw.slice(colon + 1).trim();
    if (!isHeaderValue(value))
      return { kind: 'error', message: `bad header value (a line break or a control character): ${name}` };
    headers[name.toLowerCase()] = value;
  }
  const token = values.bearer ?? env[TOKEN_ENV];
  if (token !== undefined && token !== '') {
    if (!isHeaderValue(token))
      return {
        kind: 'error',
        message: `bad bearer token (a line break or a control character; from ${values.bearer !== undefined ? '--bearer' : TOKEN_ENV})`,
      };
    headers.authorization = `Bearer ${token}`;
  }
  // fetch refuses URLs with credentials: turn them into a Basic header unless another one was given.
  if (url.username !== '' || url.password !== '') {
    const user = decodeUserinfo(url.username);
    const password = decodeUserinfo(url.password);
    if (user === undefined || password === undefined)
      return { kind: 'error', message: "bad %-escape in the URL's user or password (write % as %25)" };
    headers.authorization ??= `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    url.username = '';
    url.password = '';
  }

  const timeoutMs = positiveInt(values.timeout, DEFAULTS.timeoutMs);
  const deadlineMs = positiveInt(values.deadline, DEFAULTS.deadlineMs);
  const resumes = positiveInt(values.resumes, DEFAULTS.resumes);
  if (timeoutMs === undefined) return { kind: 'error', message: '--timeout must be a positive integer (ms)' };
  if (deadlineMs === undefined) return { kind: 'error', message: '--deadline must be a positive integer (ms)' };
  if (resumes === undefined) return { kind: 'error', message: '--resumes must be a positive integer' };

  const protocolVersion = values['protocol-version'] ?? DEFAULTS.protocolVersion;
  if (!(RESUMABLE_PROTOCOL_VERSIONS as readonly string[]).includes(protocolVersion)) {
    return { kind: 'error', message: `--protocol-version must be one of ${RESUMABLE_PROTOCOL_VERSIONS.join(', ')}` };
  }

  const streams = (values.streams ?? STREAM_KINDS.join(',')).split(',').map(k => k.trim());
  if (streams.length === 0 || !streams.every(k => (STREAM_KINDS as readonly string[]).includes(k)))
    return { kind: 'error', message: `--streams takes a comma-separated list of ${STREAM_KINDS.join(', ')}` };
  let notifyArgs: Record<string, unknown> | undefined;
  if (values['notify-args'] !== undefined) {
    const parsedArgs = parseJsonObject(values['notify-args']);
    if (parsedArgs === undefined) return { kind: 'error', message: '--notify-args must be a JSON object' };
    notifyArgs = parsedArgs;
  }
  if (values['notify-tool'] === '') return { kind: 'error', message: '--notify-tool must not be empty' };

  let pushgateway: URL | undefined;
  if (values.pushgateway !== undefined) {
    pushgateway = parseHttpUrl(values.pushgateway);
    if (pushgateway === undefined) return { kind: 'error', message: `not an http(s) URL: ${values.pushgateway}` };
    // fetch refuses a URL with credentials: say so now, not after the probe has run.
    if (pushgateway.username !== '' || pushgateway.password !== '')
      return { kind: 'error', message: '--pushgateway: credentials in the URL are not supported' };
  }
  const pushJob = values['push-job'] ?? DEFAULTS.pushJob;
  if (pushJob === '') return { kind: 'error', message: '--push-job must not be empty' };

  return {
    kind: 'options',
    options: {
      url,
      headers,
      timeoutMs,
      deadlineMs,
      resumes,
      protocolVersion,
      streams: [...new Set(streams)] as StreamKind[],
      ...(values['notify-tool'] !== undefined ? { notifyTool: values['notify-tool'] } : {}),
      ...(notifyArgs !== undefined ? { notifyArgs } : {}),
      json: values.json ?? false,
      ...(values['prom-file'] !== undefined ? { promFile: values['prom-file'] } : {}),
      ...(pushgateway !== undefined ? { pushgateway } : {}),
      pushJob,
    },
  };
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function parseHttpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** What fetch accepts as a header value (latin-1 without line breaks or other controls but tab). */
function isHeaderValue(text: string): boolean {
  return /^[\t\x20-\x7e\x80-\xff]*$/.test(text);
}

/** A URL's user or password, %-escapes decoded; undefined for a malformed escape (`%zz`). */
function decodeUserinfo(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function positiveInt(text: string | undefined, fallback: number): number | undefined {
  if (text === undefined) return fallback;
  return /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : undefined;
}

/** The target as shown in reports and metric labels: no credentials, no query string, no fragment. */
export function displayTarget(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}
