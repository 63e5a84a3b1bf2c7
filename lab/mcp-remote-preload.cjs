/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Preloaded (--require) into mcp-remote's own process by mcp-remote-client.cjs: the lab's OpenTelemetry set-up and
// forkwatch, registered before mcp-remote loads anything, as `forkwatch/register` would be. mcp-remote's stdout is
// its MCP channel: what forkwatch recorded is served on 127.0.0.1 instead, whose port goes to stderr.
const { createServer } = require('node:http');
const { setupTelemetry } = require('./telemetry.cjs');
const { readConfig } = require('./client-config.cjs');

const config = readConfig();
const forkInfos = [];
const telemetry = setupTelemetry({
  forkwatch: require(config.forkwatchEntry),
  instrumentationConfig: { ...config.instrumentation, onForkDetected: info => forkInfos.push(info) },
});
const server = createServer(async (_, res) => {
  const observed =
    globalThis.fetch[Symbol.for('forkwatch.fetch-observer')] === true ||
    globalThis[Symbol.for('forkwatch.undici-channel-observer')] === true;
  const body = { metrics: await telemetry.scrape(), spans: telemetry.finishedSpans(), forkInfos, observed };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
server.listen(0, '127.0.0.1', () => process.stderr.write(`LAB_TELEMETRY ${server.address().port}\n`));
server.unref();
