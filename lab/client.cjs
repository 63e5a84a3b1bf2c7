/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab client, CommonJS: forkwatch is registered, then the SDK's CommonJS build is required.
const { setupTelemetry } = require('./telemetry.cjs');
const { runScenario } = require('./client-scenario.cjs');
const { readConfig, sdkLoader, writeReport } = require('./client-config.cjs');

async function main() {
  const config = readConfig();
  const forkInfos = [];
  const telemetry = setupTelemetry({
    forkwatch: require(config.forkwatchEntry),
    instrumentationConfig: { ...config.instrumentation, onForkDetected: info => forkInfos.push(info) },
    metricsPort: config.metricsPort,
  });
  const load = sdkLoader(config.resolveFrom);
  const sdk =
    config.sdkLine === 'v2'
      ? { ...load('@modelcontextprotocol/client') }
      : {
          ...load('@modelcontextprotocol/sdk/client/index.js'),
          ...load('@modelcontextprotocol/sdk/client/streamableHttp.js'),
          ...load('@modelcontextprotocol/sdk/types.js'),
        };
  const report = await runScenario({ sdk, telemetry, ...config });
  writeReport({
    ...report,
    moduleSystem: 'cjs',
    forkInfos,
    sdkPatched: sdk.StreamableHTTPClientTransport.prototype._handleSseStream.__wrapped === true,
  });
  await telemetry.shutdown();
}
main().catch(error => {
  process.stderr.write(`fork-lab client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
