/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// CPU readings of this process: its total (`process.cpuUsage()`) and, on Linux, per thread group from
// /proc/self/task/*/schedstat (time on a CPU): the main thread (the JavaScript that runs, with its GC pauses), V8's
// helper threads (concurrent marking, parallel scavenges, background compilation) and the rest (libuv's pool, the
// ESM hooks thread). Whether forkwatch's cost is code that runs or GC work on the helpers shows in the groups.
//
// Node names every thread "node", so the helpers are told by their order: Node's platform starts its delayed-task
// thread and then its V8 worker pool (--v8-pool-size, 4 by default) right after the main thread, before anything else,
// so they hold this process's lowest thread ids after the main thread's. Not the pid plus 1 to 5: thread ids are
// drawn from one system-wide counter, and other processes starting at the same moment take ids in between.
const { readdirSync, readFileSync } = require('node:fs');

const V8_POOL = Number(/--v8-pool-size[= ](\d+)/.exec(process.execArgv.join(' '))?.[1] ?? 4);

/** Microseconds on a CPU so far, per thread group; undefined off Linux. */
function threadTotals() {
  let tids;
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return undefined;
  }
  const totals = { main: 0, v8: 0, other: 0 };
  const helpers = tids
    .map(Number)
    .filter(tid => tid > process.pid)
    .sort((a, b) => a - b)
    .slice(0, V8_POOL + 1);
  for (const tid of tids) {
    try {
      const us = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
      totals[Number(tid) === process.pid ? 'main' : helpers.includes(Number(tid)) ? 'v8' : 'other'] += us;
    } catch {
      // the thread ended meanwhile
    }
  }
  return totals;
}

/** The process's CPU so far: `cpuUs` in all, and per thread group where the system tells. */
function cpuReading() {
  const threads = threadTotals();
  const { user, system } = process.cpuUsage();
  return { cpuUs: user + system, threads };
}

/** What was spent between two readings: `cpuUs`, and `threads` per group (undefined off Linux). */
function cpuSpent(start, end) {
  const threads =
    start.threads && end.threads
      ? Object.fromEntries(Object.keys(end.threads).map(g => [g, end.threads[g] - start.threads[g]]))
      : undefined;
  return { cpuUs: end.cpuUs - start.cpuUs, threads };
}

module.exports = { cpuReading, cpuSpent };
