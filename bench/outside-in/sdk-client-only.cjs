/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A process that is only an MCP client, for bench/startup-heap.mjs: the SDK 1.32.2 client and its streamable HTTP
// transport loaded, one transport constructed, nothing sent. Stays up until heap-probe.cjs ends it.
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

globalThis.keep = [
  new Client({ name: 'startup-heap', version: '1.0.0' }),
  new StreamableHTTPClientTransport(new URL('http://127.0.0.1:9/mcp')),
];
setInterval(() => {}, 60_000);
