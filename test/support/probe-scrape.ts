/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real scrape of forkwatch exporter: the probe's families (`/probe` against a real SDK server with a correct
 * store) and the exporter's own (`/metrics`), for the tests that check the pack only names series that exist.
 */
import type { Server } from 'node:http';
import { parseConfig } from '../../src/cli/exporter/config';
import { createExporter, listen } from '../../src/cli/exporter/server';
import { startFixture } from '../probe/fixtures/servers';

export async function scrapeExporter(): Promise<string> {
  const target = await startFixture('sdk-server.mjs', ['--store', 'validating']);
  let server: Server | undefined;
  try {
    const config = parseConfig({ modules: { default: { timeoutMs: 2000, resumes: 2 } } });
    server = await listen(createExporter({ config }), '127.0.0.1', 0);
    const { port } = server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;
    const probe = await (await fetch(`${base}/probe?target=${encodeURIComponent(target.url)}&module=default`)).text();
    const own = await (await fetch(`${base}/metrics`)).text();
    return `${probe}${own}`;
  } finally {
    server?.closeAllConnections();
    await new Promise(resolve => (server ? server.close(resolve) : resolve(undefined)));
    await target.stop();
  }
}
