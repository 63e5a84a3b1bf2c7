/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * No test or lab hands a child a port it found free by binding port 0 and closing it: the OS gives that port to the
 * next bind(0) or outgoing connection, and a file running at the same time may take it first (CI's EADDRINUSE in
 * test/register/register-apps.test.ts). A process that can listen on port 0 and report its port does
 * (Prometheus and Alertmanager: test/support/prometheus.ts); one that must be told its port beforehand gets a lease
 * (lab/port-lease.mjs), the one place allowed to probe a port.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, test } from 'vitest';

const root = join(__dirname, '../..');
const SKIP_DIRS = new Set(['node_modules', 'runtimes', 'build', '.tmp']);
/** The lease allocator: it probes leased ports, which nothing else can be handed. */
const ALLOWED = new Set(['lab/port-lease.mjs', 'test/suite/closed-ports.test.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? [] : sources(path);
    return /\.(?:[cm]?[jt]s)$/.test(entry.name) ? [path] : [];
  });
}

/** A listen on port 0 closed again before its port is handed on, or a port-probing helper: `line: excerpt`. */
function closedPortHandoffs(text: string): string[] {
  const found: string[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  // listen(0 …) or listen({ port: 0 …}), then within a few lines a close and the port resolved or returned.
  const probe =
    /\.listen\(\s*(?:0\b|\{\s*port:\s*0\b)[\s\S]{0,400}?\.close\([\s\S]{0,120}?(?:resolve\(\s*port\s*\)|return\s+port\b)/g;
  for (const m of text.matchAll(probe)) found.push(`${lineOf(m.index)}: ${m[0].split('\n')[0]!.trim()}`);
  // A helper by the old name: whatever its body, it invites the race back.
  for (const m of text.matchAll(/\b(?:async\s+)?function\s+(freePort|getFreePort|findFreePort|pickPort)\b/g))
    found.push(`${lineOf(m.index)}: function ${m[1]}`);
  // A port told to Prometheus or Alertmanager that is not 0.
  for (const m of text.matchAll(/--web\.listen-address=(?![\w.]*:0\b)[\w.]*:?(?:\$\{|\d)/g))
    found.push(`${lineOf(m.index)}: ${m[0]}`);
  return found;
}

test('the check sees the probe-and-close helpers the suite used to have', () => {
  const old = [
    'export async function freePort(): Promise<number> {',
    '  return new Promise((resolve, reject) => {',
    '    const srv = createNetServer();',
    "    srv.listen(0, '127.0.0.1', () => {",
    '      const { port } = srv.address() as { port: number };',
    '      srv.close(() => resolve(port));',
    '    });',
    '  });',
    '}',
    'async function leased() {',
    '  const server = createServer();',
    "  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));",
    '  const { port } = server.address();',
    '  await new Promise(resolve => server.close(resolve));',
    '  return port;',
    '}',
    'const args = [`--web.listen-address=127.0.0.1:${port}`];',
    // A server that listens on 0 and keeps listening is what the suite wants: not flagged.
    "server.listen(0, '127.0.0.1', () => report(server.address().port));",
  ].join('\n');
  expect(closedPortHandoffs(old)).toEqual([
    "4: .listen(0, '127.0.0.1', () => {",
    "12: .listen(0, '127.0.0.1', resolve));",
    '1: function freePort',
    '17: --web.listen-address=127.0.0.1:$' + '{',
  ]);
});

test('no file under test/ or lab/ hands a child a port it probed free', () => {
  const files = [...sources(join(root, 'test')), ...sources(join(root, 'lab'))];
  expect(files.length).toBeGreaterThan(100);
  const found = files
    .filter(file => !ALLOWED.has(relative(root, file)))
    .flatMap(file => closedPortHandoffs(readFileSync(file, 'utf8')).map(hit => `${relative(root, file)}:${hit}`));
  expect(found).toEqual([]);
});
