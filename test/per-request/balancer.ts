/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Debian's HAProxy in front of one per-request replica, for the scenarios of issue 40: with the reference
 * deployment's HTTP settings (`option http-server-close`, the same timeouts) and, or not, `option abortonclose`.
 * Without it HAProxy keeps the server's side of a request open after the client's side closed, until the server
 * answers: the balancer that hides closes. The config is written here rather than derived from deploy/, so the
 * scenario keeps both variants whatever deploy/ turns on. Started on a free 127.0.0.1 port and stopped by its PID
 * (lab/fleet/real-parts.mjs).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: plain ESM module without types
import { trackChild } from '../../lab/fleet/children.mjs';
// @ts-expect-error: plain ESM module without types
import { startHaproxy } from '../../lab/fleet/real-parts.mjs';

export interface Balancer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

function config(abortOnClose: boolean): string {
  return [
    'global',
    '  stats socket "${MCP_ADMIN_SOCKET}" mode 600 level admin',
    '  nbthread 1',
    'defaults',
    '  mode http',
    '  option http-server-close',
    ...(abortOnClose ? ['  option abortonclose'] : []),
    '  timeout connect 2s',
    '  timeout client 1h',
    '  timeout server 1h',
    '  timeout http-request 10s',
    '  timeout http-keep-alive 10s',
    'frontend mcp',
    '  bind "${MCP_BIND}"',
    '  default_backend replica',
    'backend replica',
    '  server s1 "${MCP_S1}"',
    '',
  ].join('\n');
}

/** HAProxy over the replica at `upstreamUrl`; the balancer's URL keeps the upstream's path. */
export async function startBalancer(upstreamUrl: string, { abortOnClose }: { abortOnClose: boolean }) {
  const upstream = new URL(upstreamUrl);
  const dir = mkdtempSync(join(tmpdir(), 'per-request-balancer-'));
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config(abortOnClose));
  try {
    const address = `${upstream.hostname}:${upstream.port}`;
    const haproxy = await startHaproxy({
      servers: { s1: address, s2: address, s3: address },
      policy: 'replica',
      configFile: file,
      track: trackChild,
    });
    return {
      url: `${haproxy.url}${upstream.pathname}`,
      pid: haproxy.pid,
      async stop() {
        await haproxy.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    } satisfies Balancer;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
