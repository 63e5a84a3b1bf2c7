/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The child processes a lab started (replicas, clients, HAProxy, nginx, Redis), stopped by their PID on the way out:
// SIGKILL to every one still running when the lab exits or is interrupted (Ctrl-C, a test runner's kill), even when
// the run failed. One set for the whole lab process, whichever fleet started them.
const children = new Set();

export const trackChild = child => {
  children.add(child);
  child.once('exit', () => children.delete(child));
};

/** SIGKILL to every child still running (ChildProcess.kill signals its PID, and never throws once it exited). */
export function killAll() {
  for (const child of children) child.kill('SIGKILL');
}

process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}
