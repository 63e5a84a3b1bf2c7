/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** `forkwatch drill`'s command line: what to stand in front of, which faults to make, what to scrape, when to stop. */

export const DRILL_USAGE_ERROR = 64;

/** What happens to a client's resume (a GET with Last-Event-ID) of a stream the drill cut. */
export type ResumeFault = 'pass' | 'reroute' | 'hold' | 'drop';
/** Which SSE streams the drill cuts: the standalone GET stream, POST response streams, or both. */
export type CutStreams = 'get' | 'post' | 'all';

export interface DrillOptions {
  upstream: URL;
  rerouteUpstream: URL | undefined;
  host: string;
  port: number;
  cutAfter: number;
  streams: CutStreams;
  resume: ResumeFault;
  holdMs: number;
  faults: number;
  stopAfter: number;
  settleMs: number;
  durationMs: number;
  clientMetrics: URL[];
  serverMetrics: URL[];
  upstreamTimeoutMs: number;
  json: boolean;
}

export const DRILL_USAGE = `Usage: forkwatch drill --upstream <url> [options]

Stands between your MCP client and server on 127.0.0.1 and makes the fork lab's faults happen on your traffic:
it cuts an SSE stream in the middle of a frame after a few events, then does what --resume says with the client's
resume (the GET carrying Last-Event-ID). Point your client at the URL it prints. When it stops it prints what each
stream sent and what arrived, and every forkwatch_* series that moved on the sides it scraped.

Options:
  --upstream <url>          your server (http or https); the drill keeps the path you give (required)
  --reroute-upstream <url>  a second process of your server, without the session's log: --resume reroute sends
                            the resume there (the fault a load balancer or a rolling restart makes)
  --resume <fault>          reroute (the default with --reroute-upstream), pass (back to --upstream: a healthy
                            resume, nothing may count), hold (answered 200 with no frames for --hold-ms: a live
                            process without the log), drop (connection dropped unanswered: a replica going away)
  --cut-after <n>           cut a stream after this many events (default 3)
  --streams <kind>          get (the standalone GET stream, default: events not tied to a request), post (POST
                            response streams: what a tool sends while it runs) or all
  --faults <n>              streams to cut before passing everything through (default 1)
  --hold-ms <ms>            how long --resume hold keeps the resume open (default 15000, past the 10 s verdict timeout)
  --client-metrics <url>    your client's forkwatch metrics (http://127.0.0.1:9464/metrics); repeatable
  --server-metrics <url>    a server process's forkwatch metrics; repeatable
  --stop-after <n>          stop once n resumes of cut streams were answered, --settle-ms later (default: no)
  --settle-ms <ms>          the wait after the last resume before stopping; the client's retry of the resume
                            starts it again (default 12000)
  --duration <s>            stop after this many seconds whatever happened (default: on Ctrl-C only)
  --upstream-timeout-ms <ms> an upstream that sends no response headers this long gets 504 (default 30000)
  --host <addr>             the address to listen on (default 127.0.0.1)
  --port <n>                the port to listen on (default 0: any free port, printed)
  --json                    one JSON report on stdout at the end instead of the text
  -h, --help                show this help

Exit codes: 0 the drill ran (read the report), 2 it could not listen or reach a side, 64 usage error.
`;

export class DrillUsageError extends Error {}

function url(value: string, option: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new DrillUsageError(`${option}: not a URL: ${JSON.stringify(value.slice(0, 200))}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new DrillUsageError(`${option}: http or https only, not ${parsed.protocol}`);
  if (parsed.username || parsed.password) throw new DrillUsageError(`${option}: no credentials in the URL`);
  return parsed;
}

function integer(value: string, option: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new DrillUsageError(`${option}: an integer from ${min} to ${max}, not ${JSON.stringify(value.slice(0, 40))}`);
  return n;
}

/** The options of `forkwatch drill`, or a DrillUsageError saying what is wrong; `undefined` for --help. */
export function parseDrillArgs(argv: readonly string[]): DrillOptions | undefined {
  const values = new Map<string, string>();
  const repeated: Record<string, string[]> = { '--client-metrics': [], '--server-metrics': [] };
  let json = false;
  const valued = new Set([
    '--upstream',
    '--reroute-upstream',
    '--resume',
    '--cut-after',
    '--streams',
    '--faults',
    '--hold-ms',
    '--stop-after',
    '--settle-ms',
    '--duration',
    '--host',
    '--port',
    '--client-metrics',
    '--server-metrics',
    '--upstream-timeout-ms',
  ]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') return undefined;
    if (arg === '--json') {
      json = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!valued.has(name)) throw new DrillUsageError(`unknown option ${JSON.stringify(arg.slice(0, 60))}`);
    const value = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new DrillUsageError(`${name} needs a value`);
    if (name in repeated) repeated[name]!.push(value);
    else if (values.has(name)) throw new DrillUsageError(`${name} given twice`);
    else values.set(name, value);
  }
  const upstreamValue = values.get('--upstream');
  if (upstreamValue === undefined) throw new DrillUsageError('--upstream <url> is required');
  const upstream = url(upstreamValue, '--upstream');
  const rerouteValue = values.get('--reroute-upstream');
  const rerouteUpstream = rerouteValue === undefined ? undefined : url(rerouteValue, '--reroute-upstream');
  const resume = (values.get('--resume') ?? (rerouteUpstream ? 'reroute' : 'pass')) as ResumeFault;
  if (!['pass', 'reroute', 'hold', 'drop'].includes(resume))
    throw new DrillUsageError(`--resume: pass, reroute, hold or drop, not ${JSON.stringify(resume.slice(0, 40))}`);
  if (resume === 'reroute' && !rerouteUpstream) throw new DrillUsageError('--resume reroute needs --reroute-upstream');
  const streams = (values.get('--streams') ?? 'get') as CutStreams;
  if (!['get', 'post', 'all'].includes(streams))
    throw new DrillUsageError(`--streams: get, post or all, not ${JSON.stringify(streams.slice(0, 40))}`);
  const opt = (name: string, fallback: number, min: number, max: number) => {
    const v = values.get(name);
    return v === undefined ? fallback : integer(v, name, min, max);
  };
  return {
    upstream,
    rerouteUpstream,
    host: values.get('--host') ?? '127.0.0.1',
    port: opt('--port', 0, 0, 65535),
    cutAfter: opt('--cut-after', 3, 0, 1_000_000),
    streams,
    resume,
    holdMs: opt('--hold-ms', 15_000, 0, 3_600_000),
    faults: opt('--faults', 1, 0, 1_000_000),
    stopAfter: opt('--stop-after', 0, 0, 1_000_000),
    settleMs: opt('--settle-ms', 12_000, 0, 3_600_000),
    durationMs: opt('--duration', 0, 0, 86_400) * 1000,
    clientMetrics: repeated['--client-metrics']!.map(v => url(v, '--client-metrics')),
    serverMetrics: repeated['--server-metrics']!.map(v => url(v, '--server-metrics')),
    upstreamTimeoutMs: opt('--upstream-timeout-ms', 30_000, 1, 3_600_000),
    json,
  };
}
