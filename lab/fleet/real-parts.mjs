/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fleet's real parts: Debian's Redis, HAProxy and nginx, each started on a free 127.0.0.1 port with the
// reference deployment's own config (deploy/), in a temporary directory, and stopped by its PID.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { leasePort } from '../port-lease.mjs';

/** For the fleet's starters and tests: ports leased for this process (lab/port-lease.mjs). */
export { leasePort };

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BINARIES = { redis: '/usr/bin/redis-server', haproxy: '/usr/sbin/haproxy', nginx: '/usr/sbin/nginx' };
const sleep = ms => new Promise(r => setTimeout(r, ms));

function canConnect(port) {
  return new Promise(resolve => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Spawns a binary, keeps the tail of its output, and resolves once `ready()` holds (bounded). */
async function startProcess(name, bin, args, { env, cwd, ready, track = () => {}, dir }) {
  if (!existsSync(bin)) throw new Error(`${bin} not found: run \`node scripts/provision.mjs\` (installs ${name})`);
  const child = spawn(bin, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let logs = '';
  const keep = c => (logs = (logs + c).slice(-8000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise(resolve => child.once('exit', resolve));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited:\n${logs}`);
    if (await ready()) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not start:\n${logs}`);
    }
    await sleep(100);
  }
  return {
    pid: child.pid,
    logs: () => logs,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid, 'SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Redis with no persistence, on a free port. */
export async function startRedis({ track } = {}) {
  const port = await leasePort();
  const dir = mkdtempSync(join(tmpdir(), 'fleet-redis-'));
  const proc = await startProcess(
    'redis-server',
    BINARIES.redis,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
    ],
    { cwd: dir, dir, track, ready: () => canConnect(port) },
  );
  return { ...proc, port, url: `redis://127.0.0.1:${port}` };
}

const ABORT_ON_CLOSE = /^ {2}option abortonclose\n/m;

/**
 * deploy/haproxy/haproxy.cfg without its `option abortonclose` (written into `dir`): the balancer that keeps the
 * server side of a request open after its client left, the labs' control for what the option changes.
 */
function configWithoutAbortOnClose(dir) {
  const reference = readFileSync(join(root, 'deploy/haproxy/haproxy.cfg'), 'utf8');
  if (!ABORT_ON_CLOSE.test(reference)) throw new Error('deploy/haproxy/haproxy.cfg: no `option abortonclose` line');
  const file = join(dir, 'haproxy-without-abortonclose.cfg');
  writeFileSync(file, reference.replace(ABORT_ON_CLOSE, ''));
  return file;
}

/**
 * HAProxy with deploy/haproxy/haproxy.cfg. servers: { s1: 'host:port', s2, s3 }; policy 'sticky' | 'round-robin';
 * streamTimeout e.g. '4s' (the short-timeout variant) or undefined (the file's default). abortOnClose false: the
 * file with its `option abortonclose` line removed (the control; the file itself has it). configFile: any other
 * variant of the file.
 */
export async function startHaproxy({
  servers,
  policy = 'sticky',
  streamTimeout,
  track,
  abortOnClose = true,
  configFile,
}) {
  const port = await leasePort();
  const dir = mkdtempSync(join(tmpdir(), 'fleet-haproxy-'));
  configFile ??= abortOnClose ? join(root, 'deploy/haproxy/haproxy.cfg') : configWithoutAbortOnClose(dir);
  const socket = join(dir, 'admin.sock');
  const env = {
    MCP_BIND: `127.0.0.1:${port}`,
    MCP_POLICY: policy,
    MCP_ADMIN_SOCKET: socket,
    MCP_S1: servers.s1,
    MCP_S2: servers.s2,
    MCP_S3: servers.s3,
    ...(streamTimeout ? { MCP_STREAM_TIMEOUT: streamTimeout } : {}),
  };
  const proc = await startProcess('haproxy', BINARIES.haproxy, ['-db', '-f', configFile], {
    env,
    cwd: dir,
    dir,
    track,
    ready: async () => existsSync(socket) && (await canConnect(port)),
  });
  /** One runtime API command on the admin socket; resolves with its answer. */
  const admin = command =>
    new Promise((resolve, reject) => {
      const s = connect(socket);
      let out = '';
      s.on('data', c => (out += c));
      s.once('error', reject);
      s.once('end', () => resolve(out.trim()));
      s.write(`${command}\n`);
    });
  return {
    ...proc,
    port,
    url: `http://127.0.0.1:${port}`,
    admin,
    /** Waits (bounded) until the server's health check state is `state` (UP, DOWN, ...). */
    async waitServer(name, state, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const line = (await admin(`show servers state ${policy}`)).split('\n').find(l => l.split(' ')[3] === name);
        // srv_op_state: 0 stopped, 2 running (UP); with srv_admin_state the drain bits.
        const op = line?.split(' ')[5];
        if ((state === 'UP' && op === '2') || (state === 'DOWN' && op === '0')) return true;
        await sleep(100);
      }
      return false;
    },
  };
}

/**
 * nginx with deploy/nginx/nginx.conf rendered (its ${...} placeholders) into a temporary prefix. buffered: the
 * measurement's variant with `proxy_buffering on` and the SDK's `X-Accel-Buffering: no` ignored (a proxy that
 * buffers SSE), never the reference.
 */
export async function startNginx({ servers, balance = 'sticky', streamTimeout = '1h', track, buffered = false }) {
  const port = await leasePort();
  const dir = mkdtempSync(join(tmpdir(), 'fleet-nginx-'));
  // As root, nginx's workers run as nobody: they must be able to reach the prefix.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'tmp'), { mode: 0o777 });
  chmodSync(join(dir, 'tmp'), 0o777);
  const values = {
    MCP_LISTEN: `127.0.0.1:${port}`,
    MCP_S1: servers.s1,
    MCP_S2: servers.s2,
    MCP_S3: servers.s3,
    MCP_BALANCE: balance === 'sticky' ? 'hash $http_mcp_session_id consistent;' : '',
    MCP_STREAM_TIMEOUT: streamTimeout,
  };
  const template = readFileSync(join(root, 'deploy/nginx/nginx.conf'), 'utf8');
  // envsubst with an explicit list: only these placeholders, nginx's own $variables stay.
  let config = template.replace(/\$\{(MCP_[A-Z0-9_]+)\}/g, (m, name) => values[name] ?? m);
  if (buffered) {
    const unbuffered = config.replace(
      'proxy_buffering off;',
      'proxy_buffering on;\n    proxy_ignore_headers X-Accel-Buffering;',
    );
    if (unbuffered === config) throw new Error('deploy/nginx/nginx.conf: no `proxy_buffering off;` line');
    config = unbuffered;
  }
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, config);
  const proc = await startProcess(
    'nginx',
    BINARIES.nginx,
    ['-p', dir, '-c', conf, '-e', 'stderr', '-g', 'daemon off;'],
    { cwd: dir, dir, track, ready: () => canConnect(port) },
  );
  return { ...proc, port, url: `http://127.0.0.1:${port}` };
}
