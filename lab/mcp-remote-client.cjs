/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Fork-lab client on mcp-remote (from LAB_CLIENT.resolveFrom): the app is mcp-remote's own process, a stdio proxy
// whose bundled MCP 2.x client sends every request through the `undici` package's fetch, never the global one, with
// forkwatch preloaded (mcp-remote-preload.cjs). This process plays the stdio MCP client an IDE would be: it speaks
// JSON-RPC on mcp-remote's stdin and stdout, and runs the AI SDK client's steps (ai-sdk-scenario.cjs: a cut in the
// middle of a frame, after which the client reconnects with the last id it saw).
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const path = require('node:path');
const { createInterface } = require('node:readline');
const { runAiSdkScenario } = require('./ai-sdk-scenario.cjs');
const { readConfig, writeReport } = require('./client-config.cjs');

async function main() {
  const config = readConfig();
  const configDir = mkdtempSync(path.join(tmpdir(), 'mcp-remote-lab-'));
  const proxyJs = path.join(config.resolveFrom, 'node_modules/mcp-remote/dist/proxy.js');
  const child = spawn(
    process.execPath,
    ['--require', path.join(__dirname, 'mcp-remote-preload.cjs'), proxyJs, `${config.proxyUrl}/mcp`, '--allow-http'],
    // Its auth and lock files go to a folder of this run's.
    { env: { ...process.env, MCP_REMOTE_CONFIG_DIR: configDir }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let log = '';
  const telemetryPort = new Promise((resolve, reject) => {
    child.stderr.on('data', chunk => {
      log += chunk;
      const port = /LAB_TELEMETRY (\d+)/.exec(log);
      if (port) resolve(Number(port[1]));
    });
    child.once('exit', code => reject(new Error(`mcp-remote exited with ${code}:\n${log}`)));
  });
  telemetryPort.catch(() => {});
  const recorded = async () => (await fetch(`http://127.0.0.1:${await telemetryPort}/`)).json();
  try {
    const createMCPClient = () => stdioClient(child);
    const telemetry = {
      finishedSpans: async () => (await recorded()).spans,
      scrape: async () => (await recorded()).metrics,
    };
    const report = await runAiSdkScenario({ createMCPClient, telemetry, ...config });
    const { forkInfos, observed } = await recorded();
    writeReport({ ...report, moduleSystem: 'esm', forkInfos, sdkPatched: observed, mcpRemoteLog: log });
  } finally {
    child.kill('SIGTERM');
    rmSync(configDir, { recursive: true, force: true });
  }
}

/** An MCP client over mcp-remote's stdio, in the shape ai-sdk-scenario.cjs drives: callTool, transport.onmessage. */
async function stdioClient(child) {
  const pending = new Map();
  let nextId = 0;
  const client = {
    transport: { onmessage: () => {} },
    callTool: params => request('tools/call', params),
    // mcp-remote exits when its stdin ends: its telemetry is read first, main() stops it.
    close: async () => {},
  };
  createInterface({ input: child.stdout }).on('line', line => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    const waiting = message.id !== undefined && pending.get(message.id);
    if (!waiting) return client.transport.onmessage(message);
    pending.delete(message.id);
    if (message.error) waiting.reject(new Error(message.error.message));
    else waiting.resolve(message.result);
  });
  const send = message => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      send({ id, method, params });
    });
  await request('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'fork-lab-stdio', version: '1.0.0' },
  });
  send({ method: 'notifications/initialized' });
  return client;
}

main().catch(error => {
  process.stderr.write(`fork-lab client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
