/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Real Prometheus, Alertmanager and a webhook receiver on 127.0.0.1, for end-to-end tests.
 *
 * Uses Debian's packages (`apt-get install prometheus prometheus-alertmanager`): /usr/bin/prometheus,
 * /usr/bin/prometheus-alertmanager, /usr/bin/promtool, /usr/bin/amtool. Debian's defaults listen on 0.0.0.0 and
 * store under /var/lib/prometheus, so every process started here gets a free loopback port and its own temporary
 * storage directory, and is stopped by its pid. A missing binary is an error, never a skip.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseDocument, stringify } from 'yaml';

/** Paths of the Debian binaries. */
export const BIN = {
  prometheus: '/usr/bin/prometheus',
  promtool: '/usr/bin/promtool',
  alertmanager: '/usr/bin/prometheus-alertmanager',
  amtool: '/usr/bin/amtool',
} as const;

/** Throws (so the test fails, it never skips) when a binary is missing; says which package installs it. */
export function requireBinary(path: string): void {
  if (existsSync(path)) return;
  const pkg = path.includes('alertmanager') || path.endsWith('amtool') ? 'prometheus-alertmanager' : 'prometheus';
  throw new Error(`${path} not found: install Debian's package (apt-get install -y ${pkg}); CI installs it in .ci/run`);
}

/** A port leased to this test file's process (lab/port-lease.mjs): for a daemon that must be told its port. */
export { leasePort } from '../../lab/port-lease.mjs';

/** Polls `probe` until it returns something other than undefined/false, or throws after `timeoutMs`. */
export async function waitUntil<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  {
    timeoutMs = 30_000,
    intervalMs = 250,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
      );
    }
    await new Promise(r => setTimeout(r, intervalMs));
  }
}

/** Result of running a command line tool (promtool, amtool) to completion. */
export interface ToolResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a tool (e.g. `BIN.promtool`, `['check', 'rules', file]`) and collects its output; never throws on exit code. */
export async function runTool(
  bin: string,
  args: string[],
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<ToolResult> {
  requireBinary(bin);
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', c => (stdout += c));
    child.stderr.on('data', c => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.once('error', err => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', code => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Long-running processes

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

interface Daemon {
  child: ChildProcess;
  /** 127.0.0.1:<port>, as the daemon bound it. */
  address: string;
  logs(): string;
  stop(): Promise<void>;
}

/**
 * Starts a Prometheus-family daemon told `--web.listen-address=127.0.0.1:0`: it binds a port of the OS's choosing
 * itself and logs it (exporter-toolkit's `msg="Listening on" address=127.0.0.1:<port>`), read here; then waits for
 * `readyPath` there. No port is chosen for it, so none can be taken by another process first.
 */
async function startDaemon(
  bin: string,
  args: string[],
  readyPath: string,
  name: string,
  timeoutMs = 30_000,
): Promise<Daemon> {
  requireBinary(bin);
  const child = spawn(bin, [...args, '--web.listen-address=127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    if (lines.length > 400) lines.splice(0, lines.length - 400);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited: number | null | undefined;
  const exit = new Promise<void>(resolve =>
    child.once('exit', code => {
      exited = code;
      running.delete(child);
      resolve();
    }),
  );
  const logs = () => lines.join('\n');
  let address: string | undefined;
  const stop = async () => {
    if (exited !== undefined) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exit;
    clearTimeout(killer);
  };
  try {
    await waitUntil(
      async () => {
        if (exited !== undefined) throw new Error(`${name} exited with code ${exited}`);
        address ??= LISTENING.exec(logs())?.[1];
        if (address === undefined) return false;
        const res = await fetch(`http://${address}${readyPath}`);
        return res.ok;
      },
      { timeoutMs, intervalMs: 100, what: `${name} listening and ready at ${readyPath}` },
    );
  } catch (err) {
    await stop();
    throw new Error(`${name} did not start (${String(err)}):\n${logs()}`);
  }
  return { child, address: address!, logs, stop };
}

/** exporter-toolkit's line once the web listener is bound: the address it got. */
const LISTENING = /msg="Listening on" address=(127\.0\.0\.1:\d+)/;

// ---------------------------------------------------------------------------------------------------------------
// Prometheus

/** One element of an instant-query result (vectors; a scalar comes back as one element without labels). */
export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

/** An alert as `GET /api/v1/alerts` lists it. */
export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

/** A rule as `GET /api/v1/rules` lists it. */
export interface PromRule {
  name: string;
  query: string;
  type: 'alerting' | 'recording';
  health: 'ok' | 'err' | 'unknown';
  lastError?: string;
  state?: 'inactive' | 'pending' | 'firing';
  lastEvaluation: string;
}

export interface PromRuleGroup {
  name: string;
  file: string;
  rules: PromRule[];
}

export interface PrometheusOptions {
  /** prometheus.yml, as an object (written as YAML) or as YAML text. `global`, scrape and alerting config as usual. */
  config: Record<string, unknown> | string;
  /** A directory whose *.yml / *.yaml files are loaded as rule files (appended to the config's rule_files). */
  rulesDir?: string;
  /** Extra flags, e.g. `['--log.level=debug']`. */
  args?: string[];
  /** How long to wait for /-/ready (default 30 s). */
  readyTimeoutMs?: number;
}

export interface PrometheusInstance {
  /** http://127.0.0.1:<port> */
  url: string;
  /** 127.0.0.1:<port> */
  address: string;
  /** The temporary directory holding prometheus.yml and the TSDB (removed by stop()). */
  dir: string;
  /** Instant query at now (or at `time`, unix seconds); throws on a query error. */
  query(expr: string, time?: number): Promise<PromSample[]>;
  /** GET /api/v1/<path> and return its `data`; throws unless status is success. */
  api<T = unknown>(path: string): Promise<T>;
  /** Active (pending and firing) alerts. */
  alerts(): Promise<PromAlert[]>;
  /** Rule groups with their health and last evaluation. */
  rules(): Promise<PromRuleGroup[]>;
  /** The last lines Prometheus logged. */
  logs(): string;
  /** SIGTERM (SIGKILL after 5 s) and remove the temporary directory. */
  stop(): Promise<void>;
}

/**
 * Starts Debian's prometheus on a free 127.0.0.1 port with the given config (and rule directory), a temporary
 * --storage.tsdb.path and --web.enable-lifecycle, and waits for /-/ready. The config is checked with
 * `promtool check config` first, so a bad config fails with promtool's message.
 */
export async function startPrometheus(opts: PrometheusOptions): Promise<PrometheusInstance> {
  requireBinary(BIN.prometheus);
  const dir = await mkdtemp(join(tmpdir(), 'forkwatch-prometheus-'));
  const configFile = join(dir, 'prometheus.yml');
  let text: string;
  if (typeof opts.config === 'string') {
    text = opts.config;
    if (opts.rulesDir) {
      const doc = parseDocument(text);
      const ruleFiles = (doc.get('rule_files') as unknown as { toJSON(): string[] } | undefined)?.toJSON() ?? [];
      doc.set('rule_files', [...ruleFiles, join(opts.rulesDir, '*.yml'), join(opts.rulesDir, '*.yaml')]);
      text = doc.toString();
    }
  } else {
    const config = { ...opts.config };
    if (opts.rulesDir) {
      const ruleFiles = (config.rule_files as string[] | undefined) ?? [];
      config.rule_files = [...ruleFiles, join(opts.rulesDir, '*.yml'), join(opts.rulesDir, '*.yaml')];
    }
    text = stringify(config);
  }
  await writeFile(configFile, text);
  const check = await runTool(BIN.promtool, ['check', 'config', configFile]);
  if (check.code !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`promtool check config failed:\n${check.stdout}${check.stderr}\n--- config:\n${text}`);
  }

  try {
    const daemon = await startDaemon(
      BIN.prometheus,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        '--web.enable-lifecycle',
        ...(opts.args ?? []),
      ],
      '/-/ready',
      'prometheus',
      opts.readyTimeoutMs,
    );
    const { address } = daemon;
    const url = `http://${address}`;
    const api = async <T>(path: string): Promise<T> => {
      const res = await fetch(`${url}/api/v1/${path}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      if (body.status !== 'success') throw new Error(`prometheus /api/v1/${path}: ${body.error ?? res.status}`);
      return body.data;
    };
    return {
      url,
      address,
      dir,
      api,
      async query(expr, time) {
        const params = new URLSearchParams({ query: expr });
        if (time !== undefined) params.set('time', String(time));
        const data = await api<{ resultType: string; result: unknown }>(`query?${params}`);
        if (data.resultType === 'scalar') {
          const [, v] = data.result as [number, string];
          return [{ metric: {}, value: Number(v) }];
        }
        if (data.resultType !== 'vector') throw new Error(`query ${expr}: unexpected result type ${data.resultType}`);
        return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map(r => ({
          metric: r.metric,
          value: Number(r.value[1]),
        }));
      },
      async alerts() {
        return (await api<{ alerts: PromAlert[] }>('alerts')).alerts;
      },
      async rules() {
        return (await api<{ groups: PromRuleGroup[] }>('rules')).groups;
      },
      logs: daemon.logs,
      async stop() {
        await daemon.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Copies rule files into an existing directory (e.g. a mkdtemp), optionally rewriting every alerting rule's `for:`
 * for an end-to-end run: a fixed duration ('2s'), or a function of the alert name and its original `for`.
 * Returns the written paths.
 */
export async function copyRuleFiles(
  files: string[],
  dir: string,
  opts: { forOverride?: string | ((alert: string, original: string) => string) } = {},
): Promise<string[]> {
  const written: string[] = [];
  for (const file of files) {
    const doc = parseDocument(await readFile(file, 'utf8'));
    const override = opts.forOverride;
    if (override !== undefined) {
      const groups = doc.toJS().groups as { rules: { alert?: string; for?: string }[] }[];
      groups.forEach((g, gi) => {
        g.rules.forEach((r, ri) => {
          if (r.alert === undefined || r.for === undefined) return;
          const value = typeof override === 'string' ? override : override(r.alert, r.for);
          doc.setIn(['groups', gi, 'rules', ri, 'for'], value);
        });
      });
    }
    const target = join(dir, basename(file));
    await writeFile(target, doc.toString());
    written.push(target);
  }
  return written;
}

// ---------------------------------------------------------------------------------------------------------------
// Alertmanager

/** An alert as Alertmanager's `GET /api/v2/alerts` lists it. */
export interface AmAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  status: { state: 'active' | 'suppressed' | 'unprocessed'; inhibitedBy: string[]; silencedBy: string[] };
  receivers: { name: string }[];
  startsAt: string;
}

export interface AlertmanagerInstance {
  /** http://127.0.0.1:<port> */
  url: string;
  /** 127.0.0.1:<port>, for Prometheus' alerting.alertmanagers static_configs. */
  address: string;
  dir: string;
  /** GET /api/v2/alerts */
  alerts(): Promise<AmAlert[]>;
  logs(): string;
  /** SIGTERM (SIGKILL after 5 s) and remove the temporary directory. */
  stop(): Promise<void>;
}

/**
 * Starts Debian's prometheus-alertmanager on a free 127.0.0.1 port with the given config, a temporary
 * --storage.path and clustering off (`--cluster.listen-address=`), after `amtool check-config`; waits for /-/ready.
 */
export async function startAlertmanager(opts: {
  config: Record<string, unknown> | string;
  args?: string[];
  readyTimeoutMs?: number;
}): Promise<AlertmanagerInstance> {
  requireBinary(BIN.alertmanager);
  const dir = await mkdtemp(join(tmpdir(), 'forkwatch-alertmanager-'));
  const configFile = join(dir, 'alertmanager.yml');
  const text = typeof opts.config === 'string' ? opts.config : stringify(opts.config);
  await writeFile(configFile, text);
  const check = await runTool(BIN.amtool, ['check-config', configFile]);
  if (check.code !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`amtool check-config failed:\n${check.stdout}${check.stderr}\n--- config:\n${text}`);
  }
  try {
    const daemon = await startDaemon(
      BIN.alertmanager,
      [
        `--config.file=${configFile}`,
        `--storage.path=${join(dir, 'data')}`,
        '--cluster.listen-address=',
        ...(opts.args ?? []),
      ],
      '/-/ready',
      'alertmanager',
      opts.readyTimeoutMs,
    );
    const { address } = daemon;
    const url = `http://${address}`;
    return {
      url,
      address,
      dir,
      async alerts() {
        const res = await fetch(`${url}/api/v2/alerts`);
        if (!res.ok) throw new Error(`alertmanager /api/v2/alerts: HTTP ${res.status}`);
        return (await res.json()) as AmAlert[];
      },
      logs: daemon.logs,
      async stop() {
        await daemon.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Webhook receiver

/** The body Alertmanager POSTs to a webhook_config (version 4). */
export interface WebhookPayload {
  receiver: string;
  status: 'firing' | 'resolved';
  alerts: {
    status: 'firing' | 'resolved';
    labels: Record<string, string>;
    annotations: Record<string, string>;
    startsAt: string;
  }[];
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
}

export interface WebhookNotification {
  /** Request path, e.g. /page */
  path: string;
  receivedAt: number;
  payload: WebhookPayload;
}

export interface WebhookReceiver {
  /** http://127.0.0.1:<port>; Alertmanager may post to any path below it. */
  url: string;
  /** Every notification received so far, in order. */
  received: WebhookNotification[];
  stop(): Promise<void>;
}

/** An HTTP server on a free 127.0.0.1 port that records every Alertmanager webhook notification. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: WebhookNotification[] = [];
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', c => (body += c));
    req.on('end', () => {
      try {
        received.push({ path: req.url ?? '/', receivedAt: Date.now(), payload: JSON.parse(body) as WebhookPayload });
        res.writeHead(200).end('ok');
      } catch {
        res.writeHead(400).end('bad json');
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    stop: () =>
      new Promise<void>(resolve => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
