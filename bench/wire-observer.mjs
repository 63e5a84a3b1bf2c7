#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The wire observer's cost on a client's fetches (wire-observer-child.cjs): MCP session resumes (SSE), protocol
// 2026-07-28 POSTs answered with SSE, and plain GETs, against this process's server on 127.0.0.1, so the child's CPU
// is the client's alone. Variants, each in its own process, in rounds with a rotated order: `bare`, `bare-again`
// (the A/A control: this run's noise floor), `after` (this build) and, with --before, an older build's src/ (the
// code before a change). Per round and fetch kind: the ratio of CPU per fetch to bare's.
//
//   node scripts/build.mjs && node bench/wire-observer.mjs [--rounds 8] [--count 400] [--warmup 100]
//     [--node /path/to/node] [--before /path/to/an/older/build/src]
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize } from './stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(value('--rounds', 8));
const count = Number(value('--count', 400));
const warmup = Number(value('--warmup', 100));
const node = value('--node', process.execPath);
const before = value('--before', undefined);

// Private copies of the builds, as run.mjs does: other work may rebuild build/ while this runs.
const snapshot = join(root, '.tmp', `bench-wire-observer-${process.pid}`);
rmSync(snapshot, { recursive: true, force: true });
mkdirSync(snapshot, { recursive: true });
cpSync(join(root, 'build', 'src'), join(snapshot, 'after'), { recursive: true });
if (before) cpSync(resolve(before), join(snapshot, 'before'), { recursive: true });
const entries = { bare: '', 'bare-again': '', after: join(snapshot, 'after', 'index.js') };
if (before) entries.before = join(snapshot, 'before', 'index.js');

const frames = Array.from(
  { length: 20 },
  (_, i) => `id: ${i + 1}\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"n":${i + 1}}}\n\n`,
);
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/resume') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const write = () => {
        const part = frames.slice(i, i + 5).join('');
        i += 5;
        if (i >= frames.length) return res.end(part);
        res.write(part);
        setImmediate(write);
      };
      return write();
    }
    if (req.url === '/post') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': priming\n\n');
      return setImmediate(() => res.end('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n'));
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('plain body, not MCP');
  });
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const baseUrl = `http://127.0.0.1:${server.address().port}`;

function run(variant) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      node,
      [join(here, 'wire-observer-child.cjs'), variant, entries[variant], baseUrl, count, warmup],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', c => (out += c));
    child.on('exit', code =>
      code === 0 ? resolvePromise(JSON.parse(out)) : reject(new Error(`${variant} exited ${code}`)),
    );
  });
}

const variants = Object.keys(entries);
const perRound = [];
for (let round = 0; round < rounds; round++) {
  const shift = round % variants.length;
  const order = [...variants.slice(shift), ...variants.slice(0, shift)];
  if (round % 2 === 1) order.reverse();
  const results = {};
  for (const v of order) results[v] = await run(v);
  perRound.push(results);
  process.stderr.write(
    `round ${round + 1}/${rounds}: ${variants.map(v => `${v} ${JSON.stringify(results[v], (_key, n) => (typeof n === 'number' ? Math.round(n) : n))}`).join(', ')}\n`,
  );
}
server.close();
rmSync(snapshot, { recursive: true, force: true });

const kinds = Object.keys(perRound[0].bare);
const report = { bench: 'wire-observer', node: await versionOf(node), count, rounds, kinds: {} };
for (const kind of kinds) {
  report.kinds[kind] = { bareUsPerFetch: summarize(perRound.map(r => r.bare[kind])) };
  for (const v of variants.filter(v => v !== 'bare')) {
    report.kinds[kind][`${v}/bare`] = summarize(perRound.map(r => r[v][kind] / r.bare[kind]));
  }
}
process.stdout.write(`${JSON.stringify(report)}\n`);
const f = s => `${s.median.toFixed(3)} [${s.p25.toFixed(3)}–${s.p75.toFixed(3)}]`;
process.stderr.write(
  `\nwire observer, ${report.node}, CPU per fetch, ratio to bare (median [p25–p75] over ${rounds} rounds):\n`,
);
for (const kind of kinds) {
  const k = report.kinds[kind];
  process.stderr.write(
    `  ${kind.padEnd(7)} bare ${k.bareUsPerFetch.median.toFixed(0)} µs; ` +
      variants
        .filter(v => v !== 'bare')
        .map(v => `${v} ${f(k[`${v}/bare`])}`)
        .join(', ') +
      '\n',
  );
}

function versionOf(binary) {
  return new Promise(r => {
    const child = spawn(binary, ['-p', '`${process.version} (undici ${process.versions.undici})`']);
    let out = '';
    child.stdout.on('data', c => (out += c));
    child.on('exit', () => r(out.trim()));
  });
}
