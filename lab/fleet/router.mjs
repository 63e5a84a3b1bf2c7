/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fleet's load balancer on 127.0.0.1: routes MCP requests to server replicas by a policy, cuts SSE streams on
// request (clean end, reset, or in the middle of a frame), duplicates resumes, and counts resumes per session.
//
// Policies: 'sticky' (by Mcp-Session-Id; a session whose replica is gone fails over to the next live one) and
// 'round-robin' (every request to the next replica). Replicas are added, removed and replaced while it runs
// (rolling restart, crash). Requests under /control/ go to the control replica (no forkwatch), sticky.
//
// Control API for the client apps (JSON):
//   POST /__fleet/cut   {session, how: 'clean' | 'reset' | 'midframe', duplicate?: true}
//   GET  /__fleet/open?session=ID   {open}: the session has an open standalone (or resumed) GET stream
import { request as httpRequest, createServer, Agent } from 'node:http';

export async function startRouter({ policy = 'sticky' } = {}) {
  const replicas = new Map(); // name -> url (live)
  let control; // url of the control replica
  const sticky = new Map(); // session -> replica name
  const streams = new Map(); // session -> Set of open GET streams
  const duplicateNext = new Set(); // sessions whose next resume is sent twice
  const counts = new Map(); // session -> { resumes, cursorless, duplicates, failovers }
  const totals = { requests: 0, resumes: 0, cursorless: 0, duplicates: 0, failovers: 0, errors: 0 };
  let turn = 0;
  const agent = new Agent({ keepAlive: true, maxSockets: 512 });

  const countsOf = session => {
    let c = counts.get(session);
    if (!c) {
      c = { resumes: 0, cursorless: 0, duplicates: 0, failovers: 0, gets: 0, replicas: [] };
      counts.set(session, c);
    }
    return c;
  };
  const liveNames = () => [...replicas.keys()];
  function pick(session) {
    const names = liveNames();
    if (!names.length) return undefined;
    if (policy === 'round-robin' || !session) return names[turn++ % names.length];
    const held = sticky.get(session);
    if (held && replicas.has(held)) return held;
    // Failover: the session's replica is gone; hash onto a live one.
    const next = names[[...session].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) >>> 0, 7) % names.length];
    if (held) {
      totals.failovers++;
      countsOf(session).failovers++;
    }
    sticky.set(session, next);
    return next;
  }

  function cut(stream, how) {
    if (how === 'clean') {
      stream.res.end();
      stream.upstreamReq.destroy();
      return;
    }
    if (how === 'reset') {
      stream.res.socket?.destroy();
      stream.upstreamReq.destroy();
      return;
    }
    // Mid-frame: half of the next chunk, then the connection drops; after 250 ms without a chunk, drop anyway.
    stream.cutNext = () => {
      stream.res.socket?.destroy();
      stream.upstreamReq.destroy();
    };
    stream.cutTimer = setTimeout(() => stream.cutNext?.(), 250);
  }

  async function api(req, res) {
    const url = new URL(req.url, 'http://x');
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {};
    let answer = {};
    if (url.pathname === '/__fleet/cut') {
      const open = [...(streams.get(body.session) ?? [])];
      if (body.duplicate) duplicateNext.add(body.session);
      for (const s of open) cut(s, body.how);
      answer = { cut: open.length };
    } else if (url.pathname === '/__fleet/open') {
      answer = { open: (streams.get(url.searchParams.get('session'))?.size ?? 0) > 0 };
    } else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  /** Sends a copy of a resume to the same replica and drops whatever it answers: a racing duplicate reconnect. */
  function ghost(req, upstreamUrl) {
    const g = httpRequest(upstreamUrl, { method: 'GET', agent, headers: { ...req.headers } }, r => r.destroy());
    g.on('error', () => {});
    g.end();
  }

  function proxy(req, res) {
    totals.requests++;
    const isControl = req.url.startsWith('/control/');
    const session = req.headers['mcp-session-id'];
    const lastEventId = req.headers['last-event-id'];
    const name = isControl ? 'control' : pick(session);
    const base = isControl ? control : replicas.get(name);
    if (!base) {
      res.writeHead(503).end();
      return;
    }
    // The replicas a session's requests reached: a session that moved can fork without losing anything.
    if (session && !countsOf(session).replicas.includes(name)) countsOf(session).replicas.push(name);
    if (req.method === 'GET' && session) {
      if (lastEventId) {
        totals.resumes++;
        countsOf(session).resumes++;
      } else if (countsOf(session).gets++ > 0) {
        // A reconnect without the cursor (the SDK drops it when a resumed stream breaks before any event).
        totals.cursorless++;
        countsOf(session).cursorless++;
      }
    }
    const upstream = new URL(req.url.replace(/^\/control\//, '/'), base);
    const upstreamReq = httpRequest(
      upstream,
      { method: req.method, agent, headers: { ...req.headers, host: upstream.host } },
      upRes => {
        const newSession = upRes.headers['mcp-session-id'];
        if (newSession && !isControl && policy !== 'round-robin' && !sticky.has(newSession))
          sticky.set(newSession, name);
        res.writeHead(upRes.statusCode, upRes.headers);
        const sse = String(upRes.headers['content-type'] ?? '').includes('text/event-stream');
        if (!sse || req.method !== 'GET' || !session) {
          upRes.pipe(res);
          return;
        }
        const stream = { res, upstreamReq, cutNext: undefined, cutTimer: undefined };
        let set = streams.get(session);
        if (!set) {
          set = new Set();
          streams.set(session, set);
        }
        set.add(stream);
        const forget = () => {
          clearTimeout(stream.cutTimer);
          set.delete(stream);
          if (!set.size) streams.delete(session);
        };
        if (lastEventId && upRes.statusCode === 200 && duplicateNext.delete(session)) {
          totals.duplicates++;
          countsOf(session).duplicates++;
          ghost(req, upstream);
        }
        upRes.on('data', chunk => {
          if (stream.cutNext) {
            res.write(chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2))));
            stream.cutNext();
            stream.cutNext = undefined;
            forget();
            return;
          }
          res.write(chunk);
        });
        upRes.on('end', () => {
          forget();
          res.end();
        });
        upRes.on('error', () => {
          forget();
          res.socket?.destroy();
        });
        res.on('close', () => {
          forget();
          upstreamReq.destroy();
        });
      },
    );
    upstreamReq.on('error', () => {
      totals.errors++;
      if (!res.headersSent) res.writeHead(502).end();
      else res.socket?.destroy();
    });
    req.pipe(upstreamReq);
  }

  const server = createServer((req, res) => {
    if (req.url.startsWith('/__fleet/')) return void api(req, res).catch(() => res.writeHead(500).end());
    proxy(req, res);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    totals,
    counts,
    setReplica: (name, url) => replicas.set(name, url),
    removeReplica: name => replicas.delete(name),
    setControl: url => (control = url),
    async close() {
      for (const set of streams.values()) for (const s of set) s.res.socket?.destroy();
      server.closeAllConnections?.();
      agent.destroy();
      await new Promise(resolve => server.close(resolve));
    },
  };
}
