/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch/register on SIGTERM and SIGINT, in child processes: it flushes and shuts the SDK down, then lets the
 * signal take its default course, unless the app listens for it itself; and it waits at most 5 s for that. The flush
 * is observed where it lands: an OTLP receiver in this test (the last export is pushed at shutdown).
 */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { type AppDir, makeAppDir, startApp } from './support';

let app: AppDir;
beforeAll(() => {
  app = makeAppDir();
}, 120_000);
afterAll(() => app?.remove());

/** An OTLP/HTTP receiver on an OS port: `answer` false keeps every request waiting (a collector that hangs). */
async function otlpReceiver(answer = true) {
  const requests: string[] = [];
  const waiting: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url ?? '');
    req.resume();
    req.on('end', () =>
      answer ? res.writeHead(200, { 'content-type': 'application/json' }).end('{}') : waiting.push(res),
    );
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    server.closeAllConnections();
    await new Promise(resolve => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/metrics`, requests, waiting };
}

function startIdleApp(otlpUrl: string, env: Record<string, string> = {}) {
  return startApp({
    cwd: app.dir,
    args: ['--require', 'forkwatch/register', 'idle-app.cjs'],
    env: {
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: otlpUrl,
      // No periodic export during the test: the only one is the shutdown's.
      OTEL_METRIC_EXPORT_INTERVAL: '600000',
      OTEL_METRIC_EXPORT_TIMEOUT: '60000',
      OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '60000',
      ...env,
    },
  });
}

describe.each(['SIGTERM', 'SIGINT'] as const)('%s', signal => {
  test('no listener of the app: the last export goes out, then the signal takes its default course', async () => {
    const receiver = await otlpReceiver();
    const proc = startIdleApp(receiver.url);
    await proc.waitForStderr(/FIXTURE READY object\n/);
    expect(receiver.requests).toEqual([]);
    expect(await proc.stop(signal)).toEqual({ code: null, signal });
    expect(receiver.requests).toEqual(['/v1/metrics']); // pushed before the process went
    expect(proc.forkwatchLines()).toEqual([]);
    expect(proc.stdout()).toBe('');
  });

  test("the app listens itself: the last export goes out, and the app's listener alone decides (called once)", async () => {
    const receiver = await otlpReceiver();
    const proc = startIdleApp(receiver.url, { FIXTURE_OWN_LISTENER: '1' });
    await proc.waitForStderr(/FIXTURE READY object\n/);
    proc.child.kill(signal);
    expect(await proc.exited).toEqual({ code: 3, signal: null });
    expect(proc.stderr()).toMatch(new RegExp(`FIXTURE OWN LISTENER ${signal}\\nFIXTURE OWN LISTENER CALLS 1\\n`));
    expect(receiver.requests).toEqual(['/v1/metrics']);
    expect(proc.forkwatchLines()).toEqual([]);
  });
});

test('an export that hangs: register gives up after 5 s, says so on stderr, and the signal still ends the process', async () => {
  const receiver = await otlpReceiver(false);
  const proc = startIdleApp(receiver.url);
  await proc.waitForStderr(/FIXTURE READY object\n/);
  const t0 = performance.now();
  proc.child.kill('SIGTERM');
  const exit = await proc.exited;
  const elapsed = performance.now() - t0;
  process.stderr.write(`hanging export: the process ended ${elapsed | 0} ms after SIGTERM\n`);
  expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
  // The export was sent and never answered (the exporter's own timeout is 60 s): the 5 s cap ended the wait.
  expect(receiver.requests).toEqual(['/v1/metrics']);
  expect(receiver.waiting).toHaveLength(1);
  expect(proc.forkwatchLines()).toEqual([
    'forkwatch: shutting down the OpenTelemetry SDK failed: timed out after 5000 ms',
  ]);
  expect(elapsed).toBeGreaterThanOrEqual(5000); // a timer never fires early; no upper bound on a shared machine
});
