/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Ports for processes that must be told theirs before they start (HAProxy, nginx and Redis configs, the fork lab's
// servers, an app's OTEL_EXPORTER_PROMETHEUS_PORT), leased so that no other test file, lab or concurrent run can hand
// the same number out while this process lives.
//
// Binding port 0, closing it and passing the number on races: the OS hands that port to the next bind(0) or outgoing
// connection, and another file running at the same time may take it first (EADDRINUSE in CI). A lease here
//  - comes from below the kernel's ephemeral range (ip_local_port_range), which bind(0) and outgoing connections never
//    use, so nothing that asks the OS for a port can be given it;
//  - is held by an exclusive lock file per port (O_EXCL) in one folder under the temporary directory, shared by every
//    process on the machine that leases, and kept until this process exits (never handed out twice in a run);
//  - is checked free by a bind before it is handed out (a daemon of the machine's own may hold it).
// A lock whose owner is gone (killed before its exit handler ran) is taken over.
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LEASES = join(tmpdir(), 'forkwatch-port-leases');

/** The leasable range: [low, high), below the ephemeral range (Linux's default 32768–60999 when unreadable). */
export function leaseRange() {
  let ephemeralLow = 32_768;
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && low > 2_048) ephemeralLow = low;
  } catch {
    // not Linux: the default range
  }
  return { low: Math.max(1_024, ephemeralLow - 12_000), high: ephemeralLow };
}

const mine = new Set();
process.once('exit', () => {
  for (const port of mine) rmSync(join(LEASES, String(port)), { force: true });
});

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Takes the lock of `port` for this process: true when it is ours now. */
function lock(port) {
  const file = join(LEASES, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
  }
  // Held: take it over only when its owner is gone. The rename is atomic, so of two processes taking over the same
  // stale lock one wins; a lock renamed away that turns out live (just retaken) is put back.
  let owner;
  try {
    owner = Number(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
  if (Number.isInteger(owner) && owner > 0) {
    if (alive(owner)) return false;
  } else {
    // An unreadable lock is being written this moment, or its writer crashed mid-write (then it is a minute old).
    try {
      if (Date.now() - statSync(file).mtimeMs < 60_000) return false;
    } catch {
      return false;
    }
  }
  const aside = `${file}.stale-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch {
    return false;
  }
  const moved = Number(readFileSync(aside, 'utf8'));
  if (moved !== owner && Number.isInteger(moved) && alive(moved)) {
    renameSync(aside, file);
    return false;
  }
  unlinkSync(aside);
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch {
    return false;
  }
}

/** Whether nothing listens on `port` (any address: a listener on 127.0.0.1 or 0.0.0.0 makes this bind fail). */
function bindable(port) {
  return new Promise(resolve => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * A port leased to this process until it exits: no other leasing process on the machine gets it, and the OS never
 * hands it out for port 0. Pass it to the child that listens; the child may still be refused (a program outside the
 * tests took it), so a starter retries with a new lease on EADDRINUSE.
 */
export async function leasePort() {
  mkdirSync(LEASES, { recursive: true });
  const { low, high } = leaseRange();
  const size = high - low;
  const start = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = low + ((start + i) % size);
    if (mine.has(port) || !lock(port)) continue;
    mine.add(port);
    if (await bindable(port)) return port;
    // Someone outside the leases listens there: keep the lock (no one else tries it this run) and move on.
  }
  throw new Error(`no port left to lease in ${low}-${high - 1} (${LEASES})`);
}
