/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// One client process of the per-request fleet: the real @modelcontextprotocol/client 2.x pinned to 2026-07-28,
// talking to the balancer only. Started with `--require forkwatch/register` (its wire observer of fetch: the
// client-side signals), metrics on OTEL_EXPORTER_PROMETHEUS_PORT. Configured by FLEET_CLIENT (JSON):
//   name, url, rounds, listen (open a subscriptions/listen stream), cancelEvery (a cancelled call every N rounds,
//   0: none), cancelAfterMs, jobMs (how long the cancelled job would run), mode 'healthy' | 'abort-mid-stream'
//   (the lossy control: one call aborted once its SSE response started)
// Talks to the driver by lines: prints `READY` (connected, listen acknowledged), waits for `GO` on stdin, runs its
// rounds, prints `ROUNDS-DONE`, waits for `FINISH <publishes>`, waits (bounded) for that many notifications,
// closes its listen stream and prints `DONE <ground truth JSON>`. Stays up to be scraped until SIGTERM.
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
const { createInterface } = require('node:readline');

const config = {
  name: 'c',
  rounds: 4,
  listen: true,
  cancelEvery: 2,
  cancelAfterMs: 100,
  jobMs: 5_000,
  mode: 'healthy',
  ...JSON.parse(process.env.FLEET_CLIENT ?? '{}'),
};
const truth = {
  name: config.name,
  calls: {},
  results: {},
  /** Calls the app aborted on purpose, and whose promise then rejected. */
  cancels: 0,
  /** Anything else that failed: never expected on healthy traffic. */
  errors: [],
  notifications: 0,
  listens: 0,
  listensClosed: 0,
};
const bump = (table, key) => {
  table[key] = (table[key] ?? 0) + 1;
};
const say = line => process.stdout.write(`${line}\n`);
const sleep = ms => new Promise(r => setTimeout(r, ms));

const commands = [];
let wake;
createInterface({ input: process.stdin }).on('line', line => {
  commands.push(line.trim());
  wake?.();
});
async function command(word) {
  for (;;) {
    const i = commands.findIndex(c => c.split(' ')[0] === word);
    if (i >= 0) return commands.splice(i, 1)[0].split(' ').slice(1);
    await new Promise(r => (wake = r));
  }
}

async function call(client, name, args, options) {
  bump(truth.calls, name);
  const result = await client.callTool({ name, arguments: args }, options);
  if (result?.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  bump(truth.results, name);
  return result;
}

async function cancelled(client, name, args, afterMs) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), afterMs);
  try {
    await call(client, name, args, { signal: controller.signal });
    truth.errors.push(`${name} completed although cancelled`);
  } catch (error) {
    if (controller.signal.aborted) truth.cancels++;
    else throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function round(client, i) {
  const key = `${config.name}-r${i}`;
  await call(client, 'write_record', { ms: 2, key });
  await call(client, 'confirm_action', { key }); // two exchanges: the input round, then the retry
  // An idempotent call made twice on purpose, both completed: no broken exchange, so no re-issue.
  await call(client, 'read_record', { ms: 1, key: config.name });
  await call(client, 'read_record', { ms: 1, key: config.name });
  if (config.cancelEvery > 0 && i % config.cancelEvery === 0) {
    await cancelled(client, 'cooperative_job', { ms: config.jobMs }, config.cancelAfterMs);
  }
}

/** The lossy control: aborts a call once its SSE response has started (the log line came), before its result. */
async function abortMidStream(client) {
  const controller = new AbortController();
  const abort = by => {
    truth.abortedBy ??= by;
    controller.abort();
  };
  client.setNotificationHandler('notifications/message', () => abort('log line'));
  // Bounded: if the log line never dispatches, the abort still comes after the handler sent it.
  const timer = setTimeout(() => abort('timer'), 1_000);
  try {
    await call(client, 'slow_report', { ms: 1_500 }, { signal: controller.signal });
    truth.errors.push('slow_report completed although aborted');
  } catch (error) {
    if (controller.signal.aborted) truth.cancels++;
    else throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  const client = new Client(
    { name: `per-request-fleet-${config.name}`, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(config.url)));
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    truth.notifications++;
  });
  const sub = config.listen ? await client.listen({ toolsListChanged: true }) : undefined;
  if (sub) truth.listens++;
  say('READY');
  await command('GO');
  try {
    if (config.mode === 'abort-mid-stream') await abortMidStream(client);
    else for (let i = 0; i < config.rounds; i++) await round(client, i);
  } catch (error) {
    truth.errors.push(String(error?.stack ?? error));
  }
  say('ROUNDS-DONE');
  const [owed] = await command('FINISH');
  const deadline = Date.now() + 10_000;
  while (sub && truth.notifications < Number(owed) && Date.now() < deadline) await sleep(10);
  await sleep(100); // a publish delivered twice would show here
  if (sub) {
    await sub.close();
    truth.listensClosed++;
  }
  say(`DONE ${JSON.stringify(truth)}`);
}

main().catch(error => {
  process.stderr.write(`per-request fleet client failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
process.once('SIGTERM', () => process.exit(0));
