/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The main thread's GC pauses so far (µs), from perf_hooks' `gc` entries: what a side's garbage costs it apart from
// the code that made it. The bench's own forced GCs (`--expose-gc`, before a timed window) are left out. Entries
// arrive a little after their GC: read after the window, a pause at its very end may still be missing (the same for
// every variant).
const { PerformanceObserver, constants } = require('node:perf_hooks');

let pausedUs = 0;
const observer = new PerformanceObserver(list => {
  for (const entry of list.getEntries()) {
    if ((entry.detail?.flags ?? 0) & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) continue;
    pausedUs += entry.duration * 1000;
  }
});
observer.observe({ entryTypes: ['gc'] });

/** GC pause time on the main thread so far, µs, forced GCs left out. */
exports.gcPausedUs = () => Math.round(pausedUs);
