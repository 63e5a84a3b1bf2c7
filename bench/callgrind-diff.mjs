#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Where two variants' instructions per session differ, function by function, from the listings that
// `bench/short-sessions-instructions.mjs --keep-listings DIR` keeps: per function, (instructions in the run with
// `small + sessions` timed sessions − in the run with `small`) / sessions, for variant A and variant B, and the
// functions whose difference is largest. JIT code has no name under callgrind (it shows as one "???" line); V8's
// builtins, runtime functions and GC do.
//
//   node bench/callgrind-diff.mjs DIR --side server --a forkwatch --b bare [--sessions 100 --small 20 --top 40]
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const dir = args[0];
const side = value('--side', 'server');
const a = value('--a', 'forkwatch');
const b = value('--b', 'bare');
const sessions = Number(value('--sessions', 100));
const small = Number(value('--small', 20));
const top = Number(value('--top', 40));

/** Instructions by function name in every listing of one process (its threads' files). */
function listing(variant, n) {
  const prefix = `${side}-${variant}-${n}.callgrind`;
  const byFunction = new Map();
  for (const file of readdirSync(dir).filter(f => f.startsWith(prefix) && !f.endsWith('.callers.txt'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const m = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
      if (!m || m[2].includes('PROGRAM TOTALS')) continue;
      const bare = m[2].replace(/\s*\[[^\]]*\]\s*$/, '').replace(/^[^:]*:/, '');
      // JIT code is an address, a new one in every process: one bucket.
      const name = /^0x[0-9a-f]+('\d+)?$/.test(bare) ? '(JIT code)' : bare;
      byFunction.set(name, (byFunction.get(name) ?? 0) + Number(m[1].replaceAll(',', '')));
    }
  }
  if (byFunction.size === 0) throw new Error(`no listing ${prefix}* in ${dir}`);
  return byFunction;
}

/** Instructions per session by function: the bigger run less the smaller, over the sessions between them. */
function perSession(variant) {
  const big = listing(variant, small + sessions);
  const little = listing(variant, small);
  const out = new Map();
  for (const name of new Set([...big.keys(), ...little.keys()])) {
    out.set(name, ((big.get(name) ?? 0) - (little.get(name) ?? 0)) / sessions);
  }
  return out;
}

const pa = perSession(a);
const pb = perSession(b);
const rows = [...new Set([...pa.keys(), ...pb.keys()])].map(name => {
  const x = pa.get(name) ?? 0;
  const y = pb.get(name) ?? 0;
  return { name, a: x, b: y, delta: x - y };
});
const sum = m => [...m.values()].reduce((s, v) => s + v, 0);
console.log(
  `${side}: ${a} ${(sum(pa) / 1e6).toFixed(3)} M, ${b} ${(sum(pb) / 1e6).toFixed(3)} M instructions per session (${((sum(pa) - sum(pb)) / 1e3).toFixed(0)} k more in ${a})`,
);
console.log(`${'k/session'.padStart(10)} ${a.padStart(10)} ${b.padStart(10)}  function`);
for (const r of rows.sort((p, q) => Math.abs(q.delta) - Math.abs(p.delta)).slice(0, top)) {
  const k = v => (v / 1e3).toFixed(1).padStart(10);
  console.log(`${k(r.delta)} ${k(r.a)} ${k(r.b)}  ${r.name.slice(0, 140)}`);
}
