#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Where a process's CPU goes, from Linux perf's samples: forkwatch's own code against the host's, per session.
//
// V8's own profiler (`--cpu-prof`) samples on a timer whether the thread runs or waits for a CPU, so on a shared
// machine a function's samples hold whatever the machine did meanwhile. perf's `cpu-clock` event samples only while
// the thread is on a CPU, and with `--perf-basic-prof` node names its JIT code. Each sample goes to the innermost
// frame that is forkwatch's or the host's (the MCP SDK and its dependencies, the bench's app): a node: internal or an
// OpenTelemetry function counts for whoever called it. Samples in V8's garbage collector count apart, as do those
// with neither in their stack (the event loop, undici's own socket work, the kernel). Inlining moves a callee's
// samples to its caller, and a wrapper that TurboFan inlined the host's method into carries that method's: read the
// per-function lines as pointers, the per-owner totals as the measure.
//
//   node bench/short-sessions.mjs --rounds 1 --sessions 3000 \
//     --node-args '--perf-basic-prof --interpreted-frames-native-stack'   under
//   perf record -g -e cpu-clock -F 4999 -o perf.data -- …
//   perf script -i perf.data -F pid,tid,time,ip,sym | node bench/perf-attribution.mjs --hz 4999 --sessions 3000
//
// Every process whose frames show the bench's client or server is reported, with whether forkwatch's code ran in it;
// the first --skip-s seconds of each (start-up, warm-up) are left out.
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const hz = Number(value('--hz', 4999));
const sessions = Number(value('--sessions', 3000));
const skipS = Number(value('--skip-s', 1));
const top = Number(value('--top', 20));

const FORKWATCH = 'forkwatch/build/';
const HOST = /@modelcontextprotocol|short-sessions\/|@hono|zod|ajv|eventsource|express|json-schema|fast-uri/;
const GC = /Scavenge|MarkCompact|Heap::|GCTracer|Sweeper|ConcurrentMarking|MinorMark|Evacuat/;

const processes = new Map();
const firstAt = new Map();
let head;
let frames = [];

function take() {
  if (!head) return;
  const [pid, tid, at] = head;
  if (pid !== tid) return; // main threads only
  if (!firstAt.has(pid)) firstAt.set(pid, at);
  let p = processes.get(pid);
  if (!p) {
    p = { side: undefined, forkwatch: false, samples: 0, owners: new Map(), functions: new Map() };
    processes.set(pid, p);
  }
  // What the process is shows in its frames: the bench's client or server, with or without forkwatch.
  for (const frame of frames) {
    if (frame.includes(FORKWATCH)) p.forkwatch = true;
    else if (p.side === undefined && frame.includes('short-sessions/client')) p.side = 'client';
    else if (p.side === undefined && frame.includes('short-sessions/server')) p.side = 'server';
  }
  if (at - firstAt.get(pid) < skipS) return;
  p.samples++;
  let owner = 'runtime';
  let fn;
  if (GC.test(frames.slice(0, 12).join(' '))) owner = 'gc';
  else {
    for (const frame of frames) {
      if (frame.includes(FORKWATCH)) {
        owner = 'forkwatch';
        fn = frame.replace(/^JS:[*+~^'"]*/, '').replace(/\s\S*forkwatch\/build\//, ' ');
        break;
      }
      if (frame.startsWith('JS:') && HOST.test(frame)) {
        owner = 'host';
        break;
      }
    }
  }
  p.owners.set(owner, (p.owners.get(owner) ?? 0) + 1);
  if (fn) p.functions.set(fn, (p.functions.get(fn) ?? 0) + 1);
}

const lines = createInterface({ input: process.stdin });
lines.on('line', line => {
  const sample = /^\s*(\d+)\/(\d+)\s+([\d.]+):/.exec(line);
  if (sample) {
    take();
    head = [sample[1], sample[2], Number(sample[3])];
    frames = [];
    return;
  }
  const frame = /^\s+[0-9a-f]+\s+(.*)$/.exec(line);
  if (frame) frames.push(frame[1]);
});
lines.on('close', () => {
  take();
  const us = n => ((n * 1e6) / hz / sessions).toFixed(1);
  const order = ['forkwatch', 'host', 'runtime', 'gc'];
  for (const [pid, p] of [...processes].sort(([a], [b]) => Number(a) - Number(b))) {
    const { side, forkwatch } = p;
    if (side === undefined) continue;
    const owners = order.map(o => `${o} ${us(p.owners.get(o) ?? 0)}`).join(', ');
    console.log(`${side} ${pid}${forkwatch ? ' (forkwatch)' : ''}: ${us(p.samples)} µs/session on CPU: ${owners}`);
    for (const [fn, n] of [...p.functions].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(`  ${us(n).padStart(6)} µs  ${fn}`);
    }
  }
});
