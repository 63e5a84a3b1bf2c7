/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A client of the reference deployment that the lab kills: it initializes a session through the balancer, opens the
// session's standalone GET (SSE) stream, has the server send one notification on it, prints
// `CURSOR <session id> <event id>` once that notification arrived, and then holds the stream until it is killed
// (SIGKILL: the kernel closes its socket, as when a laptop's client process dies). URL in DEAD_STREAM_URL.
const url = process.env.DEAD_STREAM_URL;
const VERSION = '2025-11-25';

async function post(body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${body.method}: ${res.status} ${text}`);
  return res;
}

async function main() {
  const init = await post({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'dead-stream', version: '1' } },
  });
  const session = init.headers.get('mcp-session-id');
  const h = { 'mcp-session-id': session, 'mcp-protocol-version': VERSION };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  const stream = await fetch(url, { headers: { accept: 'text/event-stream', ...h } });
  if (stream.status !== 200) throw new Error(`GET: ${stream.status}`);
  const reader = stream.body.getReader();
  await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'notify', arguments: { text: 'x' } } }, h);
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended before the notification');
    text += Buffer.from(value).toString();
    const cursor = /id: (\S+)\ndata: [^\n]*notifications\/message/.exec(text)?.[1];
    if (cursor) {
      process.stdout.write(`CURSOR ${session} ${cursor}\n`);
      break;
    }
  }
  // Hold the stream (keep reading keep-alives) until killed.
  for (;;) if ((await reader.read()).done) break;
}

main().catch(error => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
