/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab client, ESM: run with `--import ./lab/esm-hooks.mjs`; forkwatch is registered, then the SDK's ESM
// build is imported (patched through the import-in-the-middle loader).
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { setupTelemetry } = require('./telemetry.cjs');
const { runScenario } = require('./client-scenario.cjs');
const { readConfig, sdkLoader, writeReport } = require('./client-config.cjs');

const config = readConfig();
const forkInfos = [];
const telemetry = setupTelemetry({
  forkwatch: await import(config.forkwatchEntry.replace(/build\/src\/index\.js$/, 'build/esm/index.mjs')),
  instrumentationConfig: { ...config.instrumentation, onForkDetected: info => forkInfos.push(info) },
  metricsPort: config.metricsPort,
});
try {
  const load = sdkLoader(config.resolveFrom, 'esm');
  const sdk =
    config.sdkLine === 'v2'
      ? { ...(await import('@modelcontextprotocol/client')) }
      : {
          ...(await load('@modelcontextprotocol/sdk/client/index.js')),
          ...(await load('@modelcontextprotocol/sdk/client/streamableHttp.js')),
          ...(await load('@modelcontextprotocol/sdk/types.js')),
        };
  const report = await runScenario({ sdk, telemetry, ...config });
  writeReport({
    ...report,
    moduleSystem: 'esm',
    forkInfos,
    sdkPatched: sdk.StreamableHTTPClientTransport.prototype._handleSseStream.__wrapped === true,
  });
  await telemetry.shutdown();
} catch (error) {
  process.stderr.write(`fork-lab client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
}
