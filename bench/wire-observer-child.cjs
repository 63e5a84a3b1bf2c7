/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One process of the wire observer benchmark (wire-observer.mjs): `bare` (nothing), or `new ForkwatchInstrumentation()`
// from the build given, then `count` rounds of fetches to the parent's server on 127.0.0.1, each read to its end as an
// app or an SDK reads it: a session resume GET (SSE, 20 frames in 4 writes, read with `for await` over the body), a
// protocol 2026-07-28 POST answered with SSE (read with text()) and a plain GET (text()). Prints JSON: CPU
// microseconds per round of the three, and per fetch kind.
const [variant, entry, baseUrl, countArg, warmupArg] = process.argv.slice(2);
const count = Number(countArg);
const warmup = Number(warmupArg);

if (variant !== 'bare' && variant !== 'bare-again') {
  const { MeterProvider } = require('@opentelemetry/sdk-metrics');
  const { ForkwatchInstrumentation } = require(entry);
  const instrumentation = new ForkwatchInstrumentation();
  instrumentation.setMeterProvider(new MeterProvider());
}

let session = 0;
const kinds = {
  resume: async () => {
    const res = await fetch(`${baseUrl}/resume`, {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': `s-${++session}`,
        'mcp-protocol-version': '2025-11-25',
        'last-event-id': '0',
      },
    });
    let bytes = 0;
    for await (const chunk of res.body) bytes += chunk.byteLength;
    return bytes;
  },
  post: async () => {
    const res = await fetch(`${baseUrl}/post`, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-protocol-version': '2026-07-28',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++session,
        method: 'tools/call',
        params: { name: 'add', arguments: { a: 1 } },
      }),
    });
    return (await res.text()).length;
  },
  plain: async () => (await (await fetch(`${baseUrl}/plain`)).text()).length,
};

(async () => {
  for (let i = 0; i < warmup; i++) for (const run of Object.values(kinds)) await run();
  const us = {};
  for (const [kind, run] of Object.entries(kinds)) {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i++) await run();
    const used = process.cpuUsage(start);
    us[kind] = (used.user + used.system) / count;
  }
  process.stdout.write(`${JSON.stringify(us)}\n`);
  process.exit(0);
})();
