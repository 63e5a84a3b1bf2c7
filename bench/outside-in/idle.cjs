/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The `idle` variant of the short-sessions bench: forkwatch loaded by register and its patches in place, its work
// switched off after the warm-up. The patched methods and the channel subscribers still run and return at their
// first line (`runtime.enabled` is false), so the variant costs what forkwatch's presence costs, apart from what it
// does per session. Reaches the instrumentation through register's published registration; flips the flag
// InstrumentationBase keeps (`isEnabled()`), not `disable()`, which would take the patches off.
'use strict';

const REGISTRATION_KEY = Symbol.for('forkwatch.register');

/** Switches the work of this process's forkwatch off, keeping its patches; throws if it cannot. */
exports.switchOff = function switchOff() {
  const instrumentation = globalThis[REGISTRATION_KEY]?.instrumentation;
  if (!instrumentation || typeof instrumentation.isEnabled !== 'function' || !('_enabled' in instrumentation)) {
    throw new Error('idle variant: no forkwatch instrumentation registered in this process');
  }
  instrumentation._enabled = false;
  if (instrumentation.enabled !== false) throw new Error('idle variant: forkwatch is still enabled');
};
