/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab client on @ai-sdk/mcp, CommonJS: the package is ESM only, and Node 20.19+ loads it with require() (its
// `default` export condition; require(esm) is on by default from 20.19). Forkwatch is registered first.
const path = require('node:path');
const { setupTelemetry } = require('./telemetry.cjs');
const { runAiSdkScenario } = require('./ai-sdk-scenario.cjs');
const { readConfig, writeReport } = require('./client-config.cjs');

async function main() {
  const config = readConfig();
  const forkInfos = [];
  const telemetry = setupTelemetry({
    forkwatch: require(config.forkwatchEntry),
    instrumentationConfig: { ...config.instrumentation, onForkDetected: info => forkInfos.push(info) },
    metricsPort: config.metricsPort,
  });
  const appRequire = require('node:module').createRequire(path.join(config.resolveFrom, 'resolve-from.js'));
  const { createMCPClient } = appRequire('@ai-sdk/mcp');
  const report = await runAiSdkScenario({ createMCPClient, telemetry, ...config });
  // The fetch wrapper (Node 22) marks fetch; undici's diagnostics channels (Node 24+) mark globalThis.
  const observed =
    globalThis.fetch[Symbol.for('forkwatch.fetch-observer')] === true ||
    globalThis[Symbol.for('forkwatch.undici-channel-observer')] === true;
  writeReport({ ...report, moduleSystem: 'cjs', forkInfos, sdkPatched: observed });
  await telemetry.shutdown();
}
main().catch(error => {
  process.stderr.write(`fork-lab client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
