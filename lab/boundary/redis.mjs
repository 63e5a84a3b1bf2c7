/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Debian's redis-server for the boundary lab, started on a free loopback port and stopped by its PID, and a minimal
// RESP client (the lab needs five commands; no client library in the dependencies).
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { leasePort } from '../port-lease.mjs';

export const REDIS_SERVER = process.env.FORKWATCH_REDIS_SERVER ?? '/usr/bin/redis-server';

/** Starts redis-server (no persistence, loopback only); resolves once it answers PING. */
export async function startRedis() {
  const port = await leasePort();
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', c => (output = (output + c).slice(-4000)));
  child.stderr.on('data', c => (output = (output + c).slice(-4000)));
  const exited = new Promise(resolve => child.once('exit', resolve));
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const client = await connectRedis(port);
      await client.command('PING');
      client.close();
      break;
    } catch (error) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`redis-server did not start on ${port}: ${error?.message ?? error}\n${output}`);
      }
      await new Promise(r => setTimeout(r, 50));
    }
  }
  return {
    port,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null) {
        process.kill(child.pid, 'SIGTERM');
        await Promise.race([exited, new Promise(r => setTimeout(r, 5000))]);
        if (child.exitCode === null) process.kill(child.pid, 'SIGKILL');
      }
    },
  };
}

const encode = args => {
  let out = `*${args.length}\r\n`;
  for (const arg of args) {
    const s = String(arg);
    out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  }
  return out;
};

/** Parses one RESP reply from buf at offset: [value, nextOffset] or undefined when incomplete. */
function parse(buf, offset) {
  const end = buf.indexOf('\r\n', offset);
  if (end === -1) return undefined;
  const type = String.fromCharCode(buf[offset]);
  const line = buf.toString('utf8', offset + 1, end);
  const next = end + 2;
  if (type === '+') return [line, next];
  if (type === '-') return [new Error(line), next];
  if (type === ':') return [Number(line), next];
  if (type === '$') {
    const length = Number(line);
    if (length === -1) return [null, next];
    if (buf.length < next + length + 2) return undefined;
    return [buf.toString('utf8', next, next + length), next + length + 2];
  }
  if (type === '*') {
    const count = Number(line);
    if (count === -1) return [null, next];
    const items = [];
    let at = next;
    for (let i = 0; i < count; i++) {
      const item = parse(buf, at);
      if (!item) return undefined;
      items.push(item[0]);
      at = item[1];
    }
    return [items, at];
  }
  throw new Error(`unexpected RESP type ${type}`);
}

/** A pipelined connection: replies come back in the order of the commands. */
export function connectRedis(port) {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const waiting = [];
    let buffer = Buffer.alloc(0);
    socket.on('data', chunk => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const reply = parse(buffer, 0);
        if (!reply) break;
        buffer = buffer.subarray(reply[1]);
        const pending = waiting.shift();
        if (reply[0] instanceof Error) pending?.reject(reply[0]);
        else pending?.resolve(reply[0]);
      }
    });
    socket.on('error', error => {
      for (const pending of waiting.splice(0)) pending.reject(error);
      reject(error);
    });
    socket.once('connect', () =>
      resolve({
        command: (...args) =>
          new Promise((res, rej) => {
            waiting.push({ resolve: res, reject: rej });
            socket.write(encode(args));
          }),
        close: () => socket.destroy(),
      }),
    );
  });
}
