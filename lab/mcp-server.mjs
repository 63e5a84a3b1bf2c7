/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab MCP server, ESM entry (see server-app.cjs for the configuration). With telemetry on, run it with
// `--import ./lab/esm-hooks.mjs`: forkwatch is registered first, then the SDK's ESM build is imported and patched
// through the import-in-the-middle loader, as in an ESM app.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
const require = createRequire(import.meta.url);
const {
  readServerConfig,
  forkwatchEntry,
  setupServerTelemetry,
  loadServerSdk,
  startLabServer,
  announce,
} = require('./server-app.cjs');

const config = readServerConfig();
try {
  const telemetry = config.telemetry
    ? setupServerTelemetry(await import(pathToFileURL(forkwatchEntry('esm')).href), config)
    : undefined;
  const sdk = await loadServerSdk(config, 'esm');
  const { LabEventStore } = await import('./event-store.mjs');
  announce(await startLabServer({ config, sdk, LabEventStore, telemetry, moduleSystem: 'esm' }));
} catch (error) {
  process.stderr.write(`fork-lab server failed: ${error?.stack ?? error}\n`);
  process.exit(1);
}
