#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The detector's cost in instructions per frame, counted by valgrind's callgrind: unlike nanoseconds, the count
// does not change when other work loads the machine. The same work as detector.cjs's "observer + ledger" (the
// frame observer, a timestamp per chunk, the last id, eventIdKey and the session ledger's consume) over the same
// SDK-format frames, in 16 KiB chunks and one frame per chunk. Each case runs twice under callgrind, with
// `passes` timed passes over 2,048 frames and with none (both after the same warm-up): the difference is the
// instructions of those passes, start-up and JIT warm-up cancelled.
//
//   node scripts/build.mjs && node bench/detector-instructions.mjs [--passes 40] [--warmup 150] [--root build/src]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const passes = Number(value('--passes', 40));
const warmup = Number(value('--warmup', 150));
const root = resolve(value('--root', join(here, '..', 'build', 'src')));
const FRAMES = 2048;

// The measured program: fixed frames (a seeded generator, so every run streams the same bytes).
const program = `
const { SseFrameObserver, SessionLedger, eventIdKey } = require(${JSON.stringify(join(root, 'core', 'index.js'))});
const [mode, chunking, warmup, passes] = process.argv.slice(1);
let seed = 42;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const hex = n => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
const encoder = new TextEncoder();
const streamId = hex(8) + '-' + hex(4) + '-' + hex(4) + '-' + hex(4) + '-' + hex(12);
const frames = [];
for (let seq = 1; seq <= ${FRAMES}; seq++) {
  const id = streamId + '_' + (1760000000000 + seq) + '_' + hex(8);
  const data = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', logger: 'bench', data: { seq, text: 'x'.repeat(64) } } });
  frames.push('event: message\\nid: ' + id + '\\ndata: ' + data + '\\n\\n');
}
let chunks;
if (chunking === 'frame') chunks = frames.map(f => encoder.encode(f));
else {
  const all = encoder.encode(frames.join(''));
  chunks = [];
  for (let i = 0; i < all.length; i += 16384) chunks.push(all.slice(i, i + 16384));
}
const ledger = new SessionLedger();
const session = ledger.touch('session', performance.now());
let sink = 0;
let now = 0;
let lastId;
const onFrame = mode === 'observer'
  ? id => { sink += id ? 1 : 0; }
  : id => { if (!id) return; lastId = id; if (session.consume(eventIdKey(id), now)) sink++; };
const pass = () => {
  const observer = new SseFrameObserver({ onFrame, onComment() {} });
  for (const chunk of chunks) { now = performance.now(); observer.push(chunk); }
  observer.end();
};
for (let i = 0; i < Number(warmup); i++) pass();
for (let i = 0; i < Number(passes); i++) pass();
if (sink < 0 || lastId === '') console.log(sink);
`;

const dir = mkdtempSync(join(os.tmpdir(), 'forkwatch-detector-cg-'));
function instructions(mode, chunking, timed) {
  const out = join(dir, `${mode}-${chunking}-${timed}.out`);
  execFileSync(
    'valgrind',
    ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, '-e', program, mode, chunking, warmup, timed],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  const totals = [...readFileSync(out, 'utf8').matchAll(/^(?:summary|totals): (\d+)/gm)].map(m => Number(m[1]));
  return Math.max(...totals);
}
const result = {};
try {
  for (const chunking of ['16k', 'frame']) {
    for (const mode of ['detector', 'observer']) {
      const perFrame = (instructions(mode, chunking, passes) - instructions(mode, chunking, 0)) / (passes * FRAMES);
      result[`${mode}/${chunking}`] = Math.round(perFrame);
      process.stderr.write(
        `${mode}, ${chunking === '16k' ? '16 KiB chunks' : 'one frame per chunk'}: ${Math.round(perFrame)} instructions per frame\n`,
      );
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({ root, passes, warmup, instructionsPerFrame: result }));
