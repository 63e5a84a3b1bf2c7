/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * `node --import forkwatch/hooks app.mjs`: the ESM loader hooks alone (lifecycle/esm-loader.ts), for ESM apps that
 * run their own OpenTelemetry SDK with ForkwatchInstrumentation. It starts nothing else; forkwatch/register installs
 * the same hooks itself. On Node 26 this is what keeps `module.register()`'s deprecation warning away.
 */
import { installEsmLoader } from './lifecycle/esm-loader';
import { describeError } from './lifecycle/register-exporters';
import { writeStderr } from './lifecycle/register-stderr';

try {
  if (installEsmLoader() === 'none')
    writeStderr('forkwatch: this Node.js cannot register ESM loader hooks: ESM code is not instrumented');
} catch (error) {
  writeStderr(`forkwatch: could not register the ESM loader hooks (${describeError(error)})`);
}
