/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `forkwatch exporter`: the probe behind an HTTP endpoint in the blackbox_exporter multi-target pattern.
 * Prometheus scrapes `/probe?target=<url>&module=<name>` (targets and intervals live in its scrape config), each
 * scrape runs one probe under the module's settings and answers its `forkwatch_probe_*` metrics. `/metrics` is
 * the exporter's own. Probes are limited in number, bounded in time, and always end their session.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { limitListener, listenerOptions, sendAnswer } from '../../shared/listener';
import { type ProbeOptions, displayTarget } from '../probe/options';
import { renderPrometheus } from '../probe/prometheus';
import { type ProbeReport, VERDICTS } from '../probe/report';
import { runProbe } from '../probe/run-probe';
import { ConfigError, type ExporterConfig, type ModuleConfig, findModule, moduleHeaders } from './config';
import { Limiter } from './limiter';
import { oneLine, quoted, withoutSecrets } from './log-text';
import { targetAllowed } from './targets';

/** Prometheus sends its scrape timeout; the probe must answer a little before it (blackbox's default offset). */
const SCRAPE_TIMEOUT_OFFSET_MS = 500;
const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

export interface ExporterOptions {
  config: ExporterConfig;
  env?: NodeJS.ProcessEnv;
  /** One line per probe and per refused request (stderr by default). */
  log?: (line: string) => void;
}

export interface Exporter {
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** The exporter's own metrics (what `/metrics` serves). */
  selfMetrics(): string;
}

export function createExporter({ config, env = process.env, log: write = () => undefined }: ExporterOptions): Exporter {
  // Values from a request are quoted where they are written; this keeps every call one line whatever slips by.
  const endpoint = new ProbeEndpoint(config, env, line => write(oneLine(line)));
  return {
    selfMetrics: () => endpoint.selfMetrics(),
    handle(req, res) {
      try {
        endpoint.route(req, res);
      } catch (error) {
        // No request may take the exporter down: whatever slipped through is logged and answered.
        endpoint.log(`forkwatch exporter: request error: ${quoted(String((error as Error)?.message))}`);
        if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'exporter error\n');
      }
    },
  };
}

/** A probe request that passed the checks: its module, target and headers. */
interface AdmittedProbe {
  moduleName: string;
  module: ModuleConfig;
  targetUrl: URL;
  headers: Record<string, string>;
}

/** The exporter's routes, its probe endpoint and the counts its own metrics report. */
class ProbeEndpoint {
  private readonly limiter: Limiter;
  private readonly probes = new Map<string, number>(); // `${module}\u0000${verdict}` → count
  private readonly refused = { queue_full: 0, bad_request: 0, target_not_allowed: 0 };
  private abandoned = 0;

  constructor(
    private readonly config: ExporterConfig,
    private readonly env: NodeJS.ProcessEnv,
    readonly log: (line: string) => void,
  ) {
    this.limiter = new Limiter(config.concurrency, config.queue);
    for (const module of Object.keys(config.modules)) {
      for (const v of VERDICTS) this.probes.set(`${module}\u0000${v}`, 0);
    }
  }

  selfMetrics(): string {
    return renderSelfMetrics(this.probes, this.refused, this.abandoned, this.limiter);
  }

  route(req: IncomingMessage, res: ServerResponse) {
    const target = requestTarget(req.url);
    if (target === undefined) return send(res, 400, 'text/plain', 'bad request target\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'GET only\n');
    switch (target.path) {
      case '/probe':
        this.probe(target.query, res, req).catch(error => {
          this.log(`forkwatch exporter: probe error: ${quoted(String((error as Error)?.message))}`);
          if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'probe error\n');
        });
        return;
      case '/metrics':
        return send(res, 200, TEXT_FORMAT, this.selfMetrics());
      case '/-/healthy':
        return send(res, 200, 'text/plain', 'OK\n');
      case '/':
        return send(
          res,
          200,
          'text/plain; charset=utf-8',
          `forkwatch exporter\n\n/probe?target=<MCP endpoint URL>&module=<${Object.keys(this.config.modules).join('|')}>\n/metrics\n`,
        );
      default:
        return send(res, 404, 'text/plain', 'not found\n');
    }
  }

  private async probe(query: URLSearchParams, res: ServerResponse, req: IncomingMessage) {
    const admitted = this.admit(query, res);
    if (admitted === undefined) return;
    const { moduleName, module, targetUrl, headers } = admitted;
    const deadlineMs = probeDeadline(module, req.headers['x-prometheus-scrape-timeout-seconds']);
    // A scrape whose client hung up is cut at once, and its slot (or its place in the queue) given back.
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const outcome = await this.limiter.run(
      () => runBounded(probeOptions(targetUrl, headers, module), deadlineMs, gone.signal),
      gone.signal,
    );
    if (outcome === 'cancelled') {
      this.abandoned++;
      this.log(
        `forkwatch exporter: probe ${quoted(displayTarget(targetUrl))} module=${quoted(moduleName)} abandoned: the client went away`,
      );
      return;
    }
    if (outcome === 'queue_full') {
      this.refused.queue_full++;
      this.log(`forkwatch exporter: 503 queue full (${this.config.concurrency} running, ${this.config.queue} waiting)`);
      return send(res, 503, 'text/plain; charset=utf-8', 'too many probes waiting\n');
    }
    const report = outcome.value;
    const key = `${moduleName}\u0000${report.verdict}`;
    this.probes.set(key, (this.probes.get(key) ?? 0) + 1);
    this.log(
      `forkwatch exporter: probe ${quoted(report.target)} module=${quoted(moduleName)} verdict=${report.verdict} ${report.durationMs} ms`,
    );
    send(res, 200, TEXT_FORMAT, renderPrometheus(report, { targetLabel: false }));
  }

  /** The module, target and headers of a probe request, or undefined once it was refused (400 or 403). */
  private admit(query: URLSearchParams, res: ServerResponse): AdmittedProbe | undefined {
    const target = query.get('target');
    const moduleName = query.get('module') ?? 'default';
    const module = findModule(this.config, moduleName);
    const bad = (message: string) => {
      this.refused.bad_request++;
      this.log(`forkwatch exporter: 400 ${message}`);
      send(res, 400, 'text/plain; charset=utf-8', `${message}\n`);
      return undefined;
    };
    if (module === undefined) return bad(`unknown module ${quoted(moduleName, 100)}`);
    const targetUrl = parseTarget(target);
    if (typeof targetUrl === 'string') return bad(targetUrl);
    // Before any connection, and before the module's secrets are even read.
    if (module.targets !== undefined && !targetAllowed(module.targets, targetUrl)) {
      this.refused.target_not_allowed++;
      const message = `target ${quoted(displayTarget(targetUrl))} is not in the targets of module ${quoted(moduleName)}`;
      this.log(`forkwatch exporter: 403 ${message}`);
      send(res, 403, 'text/plain; charset=utf-8', `${message}\n`);
      return undefined;
    }
    try {
      return { moduleName, module, targetUrl, headers: moduleHeaders(module, this.env) };
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return bad(`module ${quoted(moduleName)}: ${error.message}`);
    }
  }
}

/**
 * The path and query of a request, taken apart by hand: `new URL` throws on some paths a client may send (`//`),
 * and would read `//host/probe` as another host's /probe. Only origin-form targets (`/…`) are served.
 */
export function requestTarget(raw: string | undefined): { path: string; query: URLSearchParams } | undefined {
  const text = raw ?? '/';
  if (!text.startsWith('/')) return undefined;
  const mark = text.indexOf('?');
  if (mark === -1) return { path: text, query: new URLSearchParams() };
  return { path: text.slice(0, mark), query: new URLSearchParams(text.slice(mark + 1)) };
}

/** The exporter's own metrics, in the Prometheus text format. */
function renderSelfMetrics(
  probes: ReadonlyMap<string, number>,
  refused: Readonly<Record<string, number>>,
  abandoned: number,
  limiter: Limiter,
): string {
  const lines = [
    '# HELP forkwatch_exporter_probes_total Probes run by this exporter, by module and verdict.',
    '# TYPE forkwatch_exporter_probes_total counter',
  ];
  for (const [key, count] of probes) {
    const [module, verdict] = key.split('\u0000');
    lines.push(`forkwatch_exporter_probes_total{module=${quote(module!)},verdict="${verdict}"} ${count}`);
  }
  lines.push(
    '# HELP forkwatch_exporter_requests_refused_total /probe requests answered without a probe, by reason.',
    '# TYPE forkwatch_exporter_requests_refused_total counter',
    ...Object.entries(refused).map(([r, n]) => `forkwatch_exporter_requests_refused_total{reason="${r}"} ${n}`),
    "# HELP forkwatch_exporter_probes_abandoned_total Probes cut because the scrape's client went away first.",
    '# TYPE forkwatch_exporter_probes_abandoned_total counter',
    `forkwatch_exporter_probes_abandoned_total ${abandoned}`,
    '# HELP forkwatch_exporter_probes_in_flight Probes running now.',
    '# TYPE forkwatch_exporter_probes_in_flight gauge',
    `forkwatch_exporter_probes_in_flight ${limiter.inFlight}`,
    '# HELP forkwatch_exporter_probes_queued Probes waiting for a free slot.',
    '# TYPE forkwatch_exporter_probes_queued gauge',
    `forkwatch_exporter_probes_queued ${limiter.queued}`,
    '# HELP process_resident_memory_bytes Resident memory size in bytes.',
    '# TYPE process_resident_memory_bytes gauge',
    `process_resident_memory_bytes ${process.memoryUsage.rss()}`,
  );
  return `${lines.join('\n')}\n`;
}

/**
 * The probe within `deadlineMs`, its session's DELETE included, or cut when the scrape is abandoned: what it had not
 * decided by then is untestable (run-probe.ts), and its session still ends.
 */
async function runBounded(options: ProbeOptions, deadlineMs: number, abandoned: AbortSignal): Promise<ProbeReport> {
  return runProbe({ ...options, deadlineMs }, undefined, abandoned);
}

function probeOptions(url: URL, headers: Record<string, string>, module: ModuleConfig): ProbeOptions {
  return {
    url,
    headers,
    timeoutMs: module.timeoutMs,
    resumes: module.resumes,
    protocolVersion: module.protocolVersion,
    streams: module.streams,
    ...(module.notifyTool !== undefined ? { notifyTool: module.notifyTool } : {}),
    ...(module.notifyArgs !== undefined ? { notifyArgs: module.notifyArgs } : {}),
    json: false,
    pushJob: '',
  };
}

export function probeDeadline(module: ModuleConfig, scrapeTimeout: string | string[] | undefined): number {
  const seconds = Number(Array.isArray(scrapeTimeout) ? scrapeTimeout[0] : scrapeTimeout);
  if (!Number.isFinite(seconds) || seconds <= 0) return module.deadlineMs;
  return Math.max(100, Math.min(module.deadlineMs, seconds * 1000 - SCRAPE_TIMEOUT_OFFSET_MS));
}

/** The target URL, or why it is refused. Credentials never travel in a URL: they belong in the module. */
export function parseTarget(target: string | null): URL | string {
  if (target === null || target === '') return 'missing target parameter';
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return `target is not a URL: ${quoted(withoutSecrets(target))}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'target must be an http(s) URL';
  if (url.username !== '' || url.password !== '')
    return "credentials do not belong in the target URL: put them in the module's bearer or headers (env or file)";
  return url;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  sendAnswer(res, status, { 'content-type': type }, body);
}

function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

export async function listen(
  exporter: Exporter,
  host: string,
  port: number,
  log: (line: string) => void = () => undefined,
): Promise<Server> {
  // Slow and silent connections are closed, and connections are limited in number (shared/listener.ts); a probe
  // may run for minutes with the connection quiet, so no idle timeout applies while an answer is awaited.
  const server = limitListener(createServer(listenerOptions(), (req, res) => exporter.handle(req, res)));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // An error on the listening socket later (EMFILE on accept, …) is the server's, never the process's end.
  server.on('error', error => log(`forkwatch exporter: server error: ${error.message}`));
  return server;
}
