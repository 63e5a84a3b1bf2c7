/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab client on @ai-sdk/mcp, ESM: forkwatch is registered, then the AI SDK is imported from the app folder
// (LAB_CLIENT.resolveFrom). No loader hooks: its transport is observed on the wire (fetch), not patched.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const require = createRequire(import.meta.url);
const { setupTelemetry } = require('./telemetry.cjs');
const { runAiSdkScenario } = require('./ai-sdk-scenario.cjs');
const { readConfig, writeReport } = require('./client-config.cjs');

const config = readConfig();
const forkInfos = [];
const telemetry = setupTelemetry({
  forkwatch: await import(config.forkwatchEntry.replace(/build\/src\/index\.js$/, 'build/esm/index.mjs')),
  instrumentationConfig: { ...config.instrumentation, onForkDetected: info => forkInfos.push(info) },
  metricsPort: config.metricsPort,
});
try {
  const appRequire = createRequire(join(config.resolveFrom, 'resolve-from.js'));
  const aiSdk = await import(pathToFileURL(appRequire.resolve('@ai-sdk/mcp')).href);
  const report = await runAiSdkScenario({ createMCPClient: aiSdk.createMCPClient, telemetry, ...config });
  writeReport({ ...report, moduleSystem: 'esm', forkInfos, sdkPatched: fetchObserved() });
  await telemetry.shutdown();
} catch (error) {
  process.stderr.write(`fork-lab client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
}

/** The fetch wrapper (Node 22) marks fetch; undici's diagnostics channels (Node 24+) mark globalThis. */
function fetchObserved() {
  return (
    globalThis.fetch[Symbol.for('forkwatch.fetch-observer')] === true ||
    globalThis[Symbol.for('forkwatch.undici-channel-observer')] === true
  );
}
