/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Hostile clients for forkwatch's listeners (issue 53), shared by bench/listeners.mjs,
// test/hardening/listeners-metrics.test.ts and test/exporter/exporter-hostile.test.ts: slowloris and silent
// connections, concurrent scrapers, abandoned scrapes, pipelined floods, oversized requests, and the RSS of another
// process read from /proc.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** Resident memory of a process in bytes (Linux /proc). */
export function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}

/**
 * `count` connections that each start a request and then send one header byte every `everyMs`, never finishing
 * (`silent: true`: connections that send nothing at all). Resolves its `closed` when all were closed by the server;
 * `closedAfterMs` holds, per connection, how long after its opening the server closed it.
 */
export function slowConnections(port, count, { everyMs = 500, silent = false, host = '127.0.0.1' } = {}) {
  const sockets = [];
  const closedAfterMs = [];
  const started = Date.now();
  let opened = 0;
  let remaining = count;
  let resolveClosed;
  const closed = new Promise(resolve => (resolveClosed = resolve));
  for (let i = 0; i < count; i++) {
    const socket = connect(port, host);
    const openedAt = Date.now();
    let timer;
    socket.on('connect', () => {
      opened++;
      if (silent) return;
      socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      timer = setInterval(() => socket.write('a'), everyMs);
    });
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      closedAfterMs.push(Date.now() - openedAt);
      if (--remaining === 0) resolveClosed();
    });
    sockets.push(socket);
  }
  return {
    closedAfterMs,
    closed,
    get opened() {
      return opened;
    },
    get open() {
      return remaining;
    },
    elapsedMs: () => Date.now() - started,
    stop() {
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** One GET; resolves with the status (0 on a connection error, its code in `error`) and the body's length. */
export function get(url, { agent, timeoutMs = 30_000 } = {}) {
  return new Promise(resolve => {
    const req = request(url, { agent, timeout: timeoutMs }, res => {
      let bytes = 0;
      res.on('data', chunk => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode, bytes }));
      res.on('error', error => resolve({ status: 0, bytes, error: error.code ?? error.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', error => resolve({ status: 0, bytes: 0, error: error.code ?? error.message }));
    req.end();
  });
}

/**
 * `concurrency` scrapers, each GETting `url` back to back over keep-alive for `durationMs`; `sample()` is called
 * every `sampleMs` meanwhile. Resolves with the count of answers by status.
 */
export async function scrapers(url, concurrency, durationMs, { sample, sampleMs = 500 } = {}) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses = {};
  const end = Date.now() + durationMs;
  const sampler = sample ? setInterval(sample, sampleMs) : undefined;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const { status, error } = await get(url, { agent });
        const key = error === undefined ? status : `${status} ${error}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
      }
    }),
  );
  clearInterval(sampler);
  agent.destroy();
  return statuses;
}

/** `count` GETs of `url` whose clients hang up after `afterMs`, before any answer. */
export async function abandonedScrapes(url, count, afterMs = 200) {
  const reqs = Array.from({ length: count }, () => {
    const req = request(url, { agent: false });
    req.on('error', () => undefined);
    req.on('response', res => res.resume());
    req.end();
    return req;
  });
  await sleep(afterMs);
  for (const req of reqs) req.destroy();
}

/**
 * `count` GETs of `path` written at once on one connection (HTTP/1.1 pipelining): the server parses them all before
 * it answers any. Resolves with the count of answers by status (answers in order, each read by its content-length),
 * and how many came back before `timeoutMs` closed the connection.
 */
export function pipelined(port, path, count, { host = '127.0.0.1', timeoutMs = 10_000 } = {}) {
  return new Promise(resolve => {
    const socket = connect(port, host);
    let buffered = Buffer.alloc(0);
    const statuses = {};
    let answered = 0;
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ statuses, answered });
    };
    socket.on('data', chunk => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffered.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
        statuses[status] = (statuses[status] ?? 0) + 1;
        buffered = buffered.subarray(end + 4 + length);
        if (++answered === count) return done();
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', done);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`.repeat(count), 'latin1');
  });
}

/** Raw requests as written (oversized request lines, thousands of parameters); resolves with their statuses. */
export function rawRequest(port, text, { host = '127.0.0.1', timeoutMs = 10_000 } = {}) {
  return new Promise(resolve => {
    const socket = connect(port, host);
    let head = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', chunk => (head += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0));
    });
    socket.end(text, 'latin1');
  });
}

/** The fuzz of the issue: requests with 10,000 `target` parameters and 1 MB request lines, `rounds` of each. */
export async function oversizedRequests(port, path, rounds = 20) {
  const many = `${path}?${Array.from({ length: 10_000 }, (_, i) => `target=http://127.0.0.1:1/${i}`).join('&')}`;
  const huge = `${path}?target=${'a'.repeat(1 << 20)}`;
  const statuses = {};
  for (let i = 0; i < rounds; i++) {
    const batch = await Promise.all(
      [many, huge].map(p => rawRequest(port, `GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)),
    );
    for (const status of batch) statuses[status] = (statuses[status] ?? 0) + 1;
  }
  return statuses;
}
