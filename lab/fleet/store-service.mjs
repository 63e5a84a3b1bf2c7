/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The shared event store of the fleet (what Redis is to a real deployment): one log per session, ids numbered per
// session, served over HTTP on 127.0.0.1 to every server process. Sessions are forgotten after `maxIdleMs`.
import { createServer } from 'node:http';

export async function startStoreService({ maxIdleMs = 10 * 60_000 } = {}) {
  const logs = new Map(); // session -> { events: [{ id, streamId, message }], touched }
  const log = session => {
    let l = logs.get(session);
    if (!l) {
      l = { events: [], touched: 0 };
      logs.set(session, l);
    }
    l.touched = Date.now();
    return l;
  };
  const sweep = setInterval(() => {
    const cutoff = Date.now() - maxIdleMs;
    for (const [k, l] of logs) if (l.touched < cutoff) logs.delete(k);
  }, 30_000);
  sweep.unref();
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    const l = log(body.session);
    let answer;
    if (req.url === '/store') {
      const id = String(l.events.length + 1);
      l.events.push({ id, streamId: body.streamId, message: body.message });
      answer = { id };
    } else if (req.url === '/stream') {
      answer = { streamId: l.events.find(e => e.id === body.after)?.streamId ?? '' };
    } else if (req.url === '/replay') {
      const index = l.events.findIndex(e => e.id === body.after);
      if (index === -1) answer = { streamId: '', events: [] };
      else {
        const { streamId } = l.events[index];
        answer = { streamId, events: l.events.slice(index + 1).filter(e => e.streamId === streamId) };
      }
    } else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    sessions: () => logs.size,
    async close() {
      clearInterval(sweep);
      server.closeAllConnections?.();
      await new Promise(resolve => server.close(resolve));
    },
  };
}
