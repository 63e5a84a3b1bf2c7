/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A real stack's server (lab/stacks/*.mjs, its packages pinned in test/sdk-versions/<folder>) in a child process
 * preloaded with `forkwatch/register`, and reads of its own /metrics.
 */
import { join } from 'node:path';
import { startApp } from '../register/support';
import { leasePort } from '../support/prometheus';
import { sample } from '../support/scrape';

export const root = join(__dirname, '../..');
const register = join(root, 'build/src/register.js');
/** import-in-the-middle reads each module of the app on a shared CPU. */
export const STARTUP_MS = 120_000;

export async function startStackServer(folder: string, script: string, server: Record<string, unknown> = {}) {
  const appFolder = join(root, 'test/sdk-versions', folder);
  const port = await leasePort();
  const metricsPort = await leasePort();
  const app = startApp({
    cwd: appFolder,
    args: ['--import', register, join(root, script)],
    env: {
      STACK_APP: appFolder,
      STACK_SERVER: JSON.stringify({ port, ...server }),
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
      OTEL_LOG_LEVEL: 'debug',
      FORKWATCH_DELIVERY_WINDOW_MS: '1000',
    },
  });
  await app.waitForStderr(/STACK LISTENING/, STARTUP_MS);
  const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  /**
   * Scrapes until `family{labels}` reached `count` (recording settles after the answer), calling `meanwhile` before
   * each scrape (a session that goes on talking).
   */
  const counted = async (
    family: string,
    labels: Record<string, string>,
    count: number,
    meanwhile: () => Promise<unknown> = async () => {},
  ) => {
    for (const deadline = Date.now() + 30_000; ; ) {
      await meanwhile();
      const text = await metrics();
      if ((sample(text, family, labels) ?? 0) >= count) return text;
      if (Date.now() > deadline)
        throw new Error(`no ${count} ${family}${JSON.stringify(labels)} on /metrics:\n${text}`);
      await new Promise(r => setTimeout(r, 200));
    }
  };
  return { app, url: `http://127.0.0.1:${port}/mcp`, metrics, counted };
}

/** Every sample of `family` in `text` whose value is not 0, as `family{labels} value` lines. */
export function nonZero(text: string, family: string): string[] {
  return text
    .split('\n')
    .filter(line => line.startsWith(`${family}{`) && !/ 0$/.test(line))
    .map(line => line.replace(/,?otel_scope_[a-z]+="[^"]*"/g, ''));
}
