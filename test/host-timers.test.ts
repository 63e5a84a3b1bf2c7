/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Code that runs in the host's process takes its timers from `node:timers`, never the global `setTimeout`: a host
 * that fakes timers (vitest's and Jest's fake timers replace the globals) would otherwise hold forkwatch's verdict and
 * expiry timers, see them in its timer counts, and never fire them (server-delivery.ts's reason). The CLIs run in
 * forkwatch's own process and are exempt. Before issue 46, client/resumed-stream.ts and
 * client/per-request-exchange.ts used the globals.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, test } from 'vitest';

const SRC = join(__dirname, '../src');
const TIMER_CALL = /(?<![\w.])(set|clear)(Timeout|Interval|Immediate)\(/g;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'cli' && dir === SRC ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

test("every timer of the host's process comes from node:timers", () => {
  const globalTimers: string[] = [];
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    const imported = new Set(
      [...text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'node:timers'/g)].flatMap(m =>
        m[1]!.split(',').map(name => name.trim()),
      ),
    );
    for (const m of text.matchAll(TIMER_CALL)) {
      const name = `${m[1]}${m[2]}`;
      if (!imported.has(name)) globalTimers.push(`${relative(SRC, file)}: ${name}`);
    }
  }
  expect(globalTimers).toEqual([]);
});
