/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab client on an MCP client stack (lab/stacks/client-stacks.mjs), ESM: run with
// `--import ./lab/esm-hooks.mjs`; forkwatch is registered, then the stack is imported from its app folder
// (LAB_CLIENT.resolveFrom) and plays the lab's scenario (client-scenario.cjs) with the client it built.
import { createRequire } from 'node:module';
import { appLoader } from './load-app.mjs';
import { CLIENT_STACKS } from './client-stacks.mjs';

const require = createRequire(import.meta.url);
const { setupTelemetry } = require('../telemetry.cjs');
const { runScenario } = require('../client-scenario.cjs');
const { readConfig, writeReport } = require('../client-config.cjs');

const config = readConfig();
const forkInfos = [];
const telemetry = setupTelemetry({
  forkwatch: await import(config.forkwatchEntry.replace(/build\/src\/index\.js$/, 'build/esm/index.mjs')),
  instrumentationConfig: { ...config.instrumentation, onForkDetected: info => forkInfos.push(info) },
  metricsPort: config.metricsPort,
});
try {
  const stack = CLIENT_STACKS[config.stack];
  if (!stack) throw new Error(`unknown client stack ${config.stack}`);
  const load = appLoader(config.resolveFrom, 'esm');
  let transport;
  const connectApp = async options => {
    const app = await stack.connect(load, options);
    transport = app.transport;
    return app;
  };
  const report = await runScenario({ telemetry, ...config, connectApp });
  writeReport({
    ...report,
    moduleSystem: 'esm',
    forkInfos,
    sdkPatched: Object.getPrototypeOf(transport)._handleSseStream.__wrapped === true,
  });
  await telemetry.shutdown();
} catch (error) {
  process.stderr.write(`fork-lab client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
}
