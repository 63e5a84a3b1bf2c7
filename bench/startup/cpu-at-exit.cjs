/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Preloaded first into every process bench/startup.mjs starts, whatever the variant: writes the process's CPU time
// (process.cpuUsage(), µs, all threads) to stderr as it exits, so the bench reads CPU beside wall time.
process.once('exit', () => {
  const { user, system } = process.cpuUsage();
  process.stderr.write(`STARTUP-CPU ${user + system}\n`);
});
