/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab MCP server, CommonJS entry (see server-app.cjs for the configuration): forkwatch is registered first,
// then the SDK's CommonJS build is required and patched through require-in-the-middle, as in a CommonJS app.
const {
  readServerConfig,
  forkwatchEntry,
  setupServerTelemetry,
  loadServerSdk,
  startLabServer,
  announce,
} = require('./server-app.cjs');

async function main() {
  const config = readServerConfig();
  const telemetry = config.telemetry ? setupServerTelemetry(require(forkwatchEntry('cjs')), config) : undefined;
  const sdk = await loadServerSdk(config, 'cjs');
  const { LabEventStore } = await import('./event-store.mjs');
  announce(await startLabServer({ config, sdk, LabEventStore, telemetry, moduleSystem: 'cjs' }));
}
main().catch(error => {
  process.stderr.write(`fork-lab server failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
