/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fork lab's load balancer: a small HTTP proxy on 127.0.0.1 that routes MCP requests to server A or B and
// can cut SSE responses in the middle of a frame, the way a dropped connection does.
//
// Control API (JSON over HTTP on the same port):
//   POST /__lab/routes {post, get, resume}  where each is 'A' or 'B' (resume = GET carrying Last-Event-ID), or a
//                                           list of them, taken in turn (round robin), or 'refuse': the proxy
//                                           answers 405 itself (a gateway that does not pass GET streams)
//   POST /__lab/cut {kinds?: ['get'|'resume'|'post'], midFrame?: true, keepUpstream?: false, sessionId?}
//   GET  /__lab/log  every proxied request: {seq, method, kind, target, lastEventId, status}
//   GET  /__lab/upstream/<A|B>/<path>  the upstream's own GET /__lab/<path> (its view, e.g. standalone-streams)
import { request as httpRequest, createServer } from 'node:http';

export async function startProxy(upstreams, initialRoutes = { post: 'A', get: 'A', resume: 'A' }) {
  const routes = { ...initialRoutes };
  const log = [];
  const streams = new Set();
  let turn = 0;
  let requests = 0;
  const pick = route => (Array.isArray(route) ? route[turn++ % route.length] : route);

  const cutStream = (stream, { midFrame = true, keepUpstream = false } = {}) => {
    const destroy = () => {
      streams.delete(stream);
      stream.res.socket?.destroy();
      if (!keepUpstream) stream.upstreamReq.destroy();
      stream.entry.cut = true;
    };
    if (!midFrame) return destroy();
    // Let half of the next chunk through, then drop the connection: the client holds a partial frame.
    stream.cutNext = destroy;
    stream.cutTimer = setTimeout(destroy, 250);
  };

  const control = async (req, res) => {
    const upstreamView = /^\/__lab\/upstream\/([AB])\/([a-z-]+)$/.exec(req.url);
    if (upstreamView && upstreams[upstreamView[1]]) {
      const answer = await fetch(new URL(`/__lab/${upstreamView[2]}`, upstreams[upstreamView[1]]));
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {};
    if (req.url === '/__lab/routes') Object.assign(routes, body);
    else if (req.url === '/__lab/cut') {
      const kinds = body.kinds ?? ['get', 'resume'];
      for (const s of [...streams]) {
        if (kinds.includes(s.entry.kind) && (!body.sessionId || s.entry.sessionId === body.sessionId))
          cutStream(s, body);
      }
    } else if (req.url !== '/__lab/log') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ routes, log }));
  };

  const server = createServer((req, res) => {
    if (req.url.startsWith('/__lab/')) return void control(req, res);
    const lastEventId = req.headers['last-event-id'];
    const kind = req.method === 'GET' ? (lastEventId ? 'resume' : 'get') : 'post';
    const target = pick(routes[kind]) ?? 'A';
    const sessionId = req.headers['mcp-session-id'];
    const entry = { seq: ++requests, method: req.method, kind, target, lastEventId, sessionId, status: null };
    log.push(entry);
    // A long-running lab keeps only the recent past.
    if (log.length > 5000) log.splice(0, log.length - 5000);
    if (target === 'refuse') {
      entry.status = 405;
      req.resume();
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
      return;
    }
    const upstream = new URL(req.url, upstreams[target]);
    const upstreamReq = httpRequest(
      upstream,
      { method: req.method, headers: { ...req.headers, host: upstream.host } },
      upRes => {
        entry.status = upRes.statusCode;
        res.writeHead(upRes.statusCode, upRes.headers);
        if (!String(upRes.headers['content-type'] ?? '').includes('text/event-stream')) {
          upRes.pipe(res);
          return;
        }
        // A balancer passes an SSE response's headers on as they come: a 200 that sends nothing reaches the client.
        res.flushHeaders();
        const stream = { res, upRes, upstreamReq, entry, cutNext: undefined, cutTimer: undefined };
        streams.add(stream);
        upRes.on('data', chunk => {
          if (stream.cutNext) {
            clearTimeout(stream.cutTimer);
            res.write(chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2))));
            stream.cutNext();
            stream.cutNext = undefined;
            return;
          }
          res.write(chunk);
        });
        upRes.on('end', () => {
          streams.delete(stream);
          res.end();
        });
        upRes.on('error', () => res.socket?.destroy());
      },
    );
    upstreamReq.on('error', () => {
      entry.status = entry.status ?? 502;
      if (!res.headersSent) res.writeHead(502).end();
      else res.socket?.destroy();
    });
    res.on('close', () => {
      // The client went away: do not leave the upstream stream hanging.
      if (!entry.cut) upstreamReq.destroy();
      streams.forEach(s => {
        if (s.res === res) streams.delete(s);
      });
    });
    req.pipe(upstreamReq);
  });

  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    log,
    routes,
    async close() {
      for (const s of streams) s.res.socket?.destroy();
      server.closeAllConnections?.();
      await new Promise(resolve => server.close(resolve));
    },
  };
}
