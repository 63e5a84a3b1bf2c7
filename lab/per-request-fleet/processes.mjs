/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Child processes of the per-request fleet, each started with `--require forkwatch/register` (the built entry point
// of this checkout) and its Prometheus metrics on a free port, spoken to by lines on stdin/stdout, tracked, and
// stopped by their PID (SIGKILL on the way out if anything is left, even when the run fails).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trackChild } from '../fleet/children.mjs';
import { leasePort } from '../fleet/real-parts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, '..', '..');
export const REGISTER = join(root, 'build/src/register.js');

export function assertBuilt() {
  if (!existsSync(REGISTER)) throw new Error(`${REGISTER} missing: run \`node scripts/build.mjs\` first`);
}

/**
 * Spawns `file` (in this folder) with forkwatch preloaded and `config` as JSON in `envName`. Returns its PID,
 * metrics URL, `line(word, timeoutMs)` (the rest of the next stdout line starting with `word`), `send(line)`, `stop()`.
 */
export async function spawnWithForkwatch(file, envName, config) {
  assertBuilt();
  const metricsPort = await leasePort();
  const child = spawn(process.execPath, ['--require', REGISTER, join(here, file)], {
    cwd: root,
    env: {
      ...process.env,
      [envName]: JSON.stringify(config),
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
      OTEL_TRACES_EXPORTER: 'none',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  trackChild(child);
  let stderr = '';
  child.stderr.on('data', c => (stderr = (stderr + c).slice(-8000)));
  const exited = new Promise(resolve => child.once('exit', resolve));
  const lines = [];
  const waiters = new Set();
  let partial = '';
  child.stdout.on('data', chunk => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    lines.push(...parts);
    for (const w of waiters) w();
  });
  child.once('exit', () => {
    for (const w of waiters) w();
  });
  const line = (word, timeoutMs = 60_000) =>
    new Promise((resolve, reject) => {
      const deadline = setTimeout(
        () => done(new Error(`${file} ${config.name}: no ${word} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const check = () => {
        const i = lines.findIndex(l => l === word || l.startsWith(`${word} `));
        if (i >= 0) return done(undefined, lines.splice(i, 1)[0].slice(word.length + 1));
        if (child.exitCode !== null || child.signalCode !== null) done(new Error(`${file} ${config.name} exited`));
      };
      const done = (error, value) => {
        clearTimeout(deadline);
        waiters.delete(check);
        if (error) reject(new Error(`${error.message}:\n${stderr}`));
        else resolve(value);
      };
      waiters.add(check);
      check();
    });
  return {
    pid: child.pid,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    line,
    send: text => child.stdin.write(`${text}\n`),
    stderr: () => stderr,
    async metrics() {
      return (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

/** Waits (bounded) until the scrape shows forkwatch patched `sdkClass`: the process is instrumented and serving. */
export async function waitPatched(proc, sdkClass, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  const pattern = new RegExp(`^forkwatch_instrumentation_info\\{[^}]*sdk_class="${sdkClass}"[^}]*\\} 1$`, 'm');
  for (;;) {
    try {
      if (pattern.test(await proc.metrics())) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`forkwatch did not report ${sdkClass} patched:\n${proc.stderr()}`);
    await new Promise(r => setTimeout(r, 100));
  }
}
