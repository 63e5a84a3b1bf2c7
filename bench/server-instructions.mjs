#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The server side's cost per stored event in instructions, counted by valgrind's callgrind (a count other load on
// the machine does not change): server-delivery-child.cjs (the SDK's web-standard transport and InMemoryEventStore;
// per session `count` events written live on the standalone GET stream, the stream dropped, `count` more stored
// with no connection, then close()) under bare NodeSDK and under NodeSDK + forkwatch. Each variant runs with
// `sessions` measured sessions and with none, after the same warm-up: the difference is those sessions' events.
//
//   node scripts/build.mjs && node bench/server-instructions.mjs [--count 500] [--sessions 4] [--root build/src]
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const count = Number(value('--count', 500));
const sessions = Number(value('--sessions', 4));
const warmup = Number(value('--warmup', 3));
const root = resolve(value('--root', join(here, '..', 'build', 'src')));
const variants = value('--variants', 'sdk,sdk+forkwatch').split(',');
const dir = mkdtempSync(join(os.tmpdir(), 'forkwatch-server-cg-'));

async function instructions(variant, measured) {
  const out = join(dir, `${variant}-${measured}.out`);
  await promisify(execFile)(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      process.execPath,
      join(here, 'server-delivery-child.cjs'),
      variant,
      join(root, 'index.js'),
      String(count),
      String(measured),
      String(warmup),
    ],
    { maxBuffer: 1 << 24, env: { ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' } },
  );
  return Math.max(...[...readFileSync(out, 'utf8').matchAll(/^(?:summary|totals): (\d+)/gm)].map(m => Number(m[1])));
}

const perEvent = {};
try {
  await Promise.all(
    variants.map(async variant => {
      const [none, some] = await Promise.all([instructions(variant, 0), instructions(variant, sessions)]);
      perEvent[variant] = (some - none) / (sessions * count * 2);
      process.stderr.write(`${variant}: ${Math.round(perEvent[variant])} instructions per stored event\n`);
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const extra = perEvent['sdk+forkwatch'] - perEvent.sdk;
console.log(
  JSON.stringify({ root, count, sessions, warmup, instructionsPerStoredEvent: perEvent, forkwatchExtra: extra }),
);
