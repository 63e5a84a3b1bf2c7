/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Preloaded last by bench/startup-heap.mjs: once the process has started (its MCP SDK loaded, forkwatch's register
// decided), two full GCs, then one JSON line on stderr: the heap in use and the forkwatch modules loaded. Then exits.
const { createRequire } = require('node:module');
const { dirname, join, sep } = require('node:path');
const { isMainThread } = require('node:worker_threads');

function probe() {
  let src;
  try {
    // Resolved from the app's directory: from this file, inside the repository, it would resolve to the repository.
    src = dirname(createRequire(join(process.cwd(), 'app.js')).resolve('forkwatch/register')) + sep;
  } catch {
    src = undefined; // the bare process has no forkwatch to resolve
  }
  const modules = src ? Object.keys(require.cache).filter(file => file.startsWith(src)) : [];
  globalThis.gc();
  globalThis.gc();
  const { heapUsed } = process.memoryUsage();
  process.stderr.write(`HEAP ${JSON.stringify({ heapUsed, modules: modules.length })}\n`);
  process.exit(0);
}

// --require preloads run in the ESM loader hooks' thread too (forkwatch registers hooks): measure the app's thread.
if (isMainThread) setTimeout(probe, Number(process.env.HEAP_PROBE_DELAY_MS ?? 1500));
