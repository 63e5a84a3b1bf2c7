/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // src/ loads some modules on first use with require(): answered from vitest's own instances.
    setupFiles: ['test/setup/src-require.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration tests start servers and child processes: keep the 2-core machine from thrashing. `npm test` sets
    // each Node.js line's own count (scripts/runtimes.mjs `workers`).
    maxWorkers: 2,
  },
});
