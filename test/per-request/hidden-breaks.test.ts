/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Issue 40's scenarios on the real 2.x packages at 2026-07-28, each with its healthy control, every one RUNS times
 * with ground truth kept by the tools, the client app and its process: a re-issue that reaches the server before
 * the close notice of the exchange it repeats, a handler that honours the cancel after it committed, an app's cancel
 * storm, a client process that dies mid-call, and Debian's HAProxy with and without `option abortonclose` (the
 * balancer that hides closes), without and with `perRequest.balancerHidesCloses`. Each run's server signals are the
 * metric deltas it caused; the ones an alert reads are the delivered-results SLO's bad events (probable re-issues,
 * every idempotency), the duplicate-execution risk, publishes without a listener and orphaned tasks. Lossy runs are
 * scored by whether such a signal rose, lossless runs by whether one rose anyway (a false signal). The clients run
 * forkwatch too (the in-test clients share the test's, the client process loads forkwatch/register and is scraped
 * before it exits): their signals an alert reads are the exchanges broken and not re-issued (the page
 * ForkwatchClientResultsLost), the re-issues and the dropped listen streams (tickets). A lossy run is detected by
 * either side; a lossless one must raise nothing a page reads on the client (the app's cancels count `cancelled`, a
 * crashed client process counts nothing: it is dead). The table goes to stderr for the report.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, root, setupForkwatch } from '../server/support';
import { sampleOne } from '../support/lab';
import { leasePort } from '../support/prometheus';
import { type Balancer, startBalancer } from './balancer';
import {
  type Cutter,
  type LabClient,
  type Replica,
  connectClient,
  serverSdk,
  sleep,
  startCutter,
  startReplica,
  until,
} from './support';

const RUNS = 5;
/** The re-issue window: the late close notice and a re-issue fit in it on a loaded machine. */
const WINDOW_MS = 3_000;
/**
 * How late the server hears of the break. The client re-issues within a few milliseconds of it; 1 s rather than the
 * issue's 500 ms keeps "the re-issue came first" true on a machine shared by seven engineers (at 500 ms one run in
 * five started its re-issue late there).
 */
const CLOSE_NOTICE_DELAY_MS = 1_000;

const M = METRICS;
const SIGNALS = {
  slo_bad: (m: string) =>
    [...['not_idempotent', 'idempotent', 'not_a_tool']].reduce(
      (sum, idempotency) => sum + (sampleOne(m, M.serverProbableReissues.prometheusName, { idempotency }) ?? 0),
      0,
    ),
  duplicate_risk: (m: string) =>
    sampleOne(m, M.serverProbableReissues.prometheusName, { idempotency: 'not_idempotent' }) ?? 0,
  no_listener: (m: string) => sampleOne(m, M.serverListenPublishes.prometheusName, { outcome: 'no_listener' }) ?? 0,
  orphaned_task: (m: string) => sampleOne(m, M.serverOrphanedTasks.prometheusName) ?? 0,
  late_result: (m: string) => sampleOne(m, M.serverLateMessages.prometheusName, { kind: 'result' }) ?? 0,
  reissue_after_cancel: (m: string) =>
    sampleOne(m, M.serverReissuesAfterHonouredCancel.prometheusName, { idempotency: 'not_idempotent' }) ?? 0,
  delivered: (m: string) => sampleOne(m, M.serverExchanges.prometheusName, { outcome: 'delivered' }) ?? 0,
  unconfirmed: (m: string) => sampleOne(m, M.serverExchanges.prometheusName, { outcome: 'unconfirmed' }) ?? 0,
};
type Signal = keyof typeof SIGNALS;
/** The signals some alert of the pack reads (the SLO burn, the duplicate-execution and listener tickets, ...). */
const ALERT_READ: readonly Signal[] = ['slo_bad', 'duplicate_risk', 'no_listener', 'orphaned_task'];
/** Server signals no alert reads: on a lossy run, the server saw something; on a lossless one, nothing pages. */
const UNREAD: readonly Signal[] = ['late_result', 'reissue_after_cancel', 'unconfirmed'];

const CLIENT_SIGNALS = {
  not_reissued: (m: string) => sampleOne(m, M.clientReissues.prometheusName, { outcome: 'not_reissued' }) ?? 0,
  reissued: (m: string) => sampleOne(m, M.clientReissues.prometheusName, { outcome: 'reissued' }) ?? 0,
  listen_dropped: (m: string) => sampleOne(m, M.clientListenStreams.prometheusName, { outcome: 'dropped' }) ?? 0,
  ...Object.fromEntries(
    (['completed', 'ended_early', 'broken', 'cancelled', 'failed'] as const).map(outcome => [
      outcome,
      (m: string) => sampleOne(m, M.clientExchanges.prometheusName, { outcome }) ?? 0,
    ]),
  ),
} as Record<ClientSignal, (m: string) => number>;
type ClientSignal =
  | 'not_reissued'
  | 'reissued'
  | 'listen_dropped'
  | 'completed'
  | 'ended_early'
  | 'broken'
  | 'cancelled'
  | 'failed';
/** What ForkwatchClientResultsLost (a page) counts as lost: broken or ended early, and not re-issued. */
const CLIENT_PAGE_READ: readonly ClientSignal[] = ['not_reissued'];
/** The client signals some alert reads: the page, and the re-issue and dropped-listen tickets. */
const CLIENT_ALERT_READ: readonly ClientSignal[] = ['not_reissued', 'reissued', 'listen_dropped'];
const clientValues = (m: string) =>
  Object.fromEntries((Object.keys(CLIENT_SIGNALS) as ClientSignal[]).map(k => [k, CLIENT_SIGNALS[k](m)])) as Record<
    ClientSignal,
    number
  >;

interface Scenario {
  name: string;
  /** Ground truth: a result a live client wanted was lost, or work it asked for once ran twice. */
  lossy: boolean;
  /** Every signal's exact delta per run (the others must not move). */
  expected: Partial<Record<Signal, number>>;
  /** Every client signal's exact delta per run, on the side of the client that made the calls. */
  client: Partial<Record<ClientSignal, number>>;
  /**
   * Plays one run; returns whether its ground truth held. A scenario whose client is a process of its own hands
   * that process's metrics to `clientScraped` (never called for a process that died: it counted nothing).
   */
  run(clientScraped: (metrics: string) => void): Promise<boolean>;
  /** The client is a process of its own: its signals are what it counted, not the test process's deltas. */
  clientProcess?: boolean;
}

interface Score {
  name: string;
  lossy: boolean;
  truthHeld: number;
  exact: number;
  clientExact: number;
  alertRead: number;
  /** Runs where a client signal some alert reads rose. */
  clientAlertRead: number;
  /** Runs where an alert-read signal rose on either side. */
  eitherAlertRead: number;
  /** Runs where a client signal a page reads rose. */
  clientPageRead: number;
  /** Runs where any server loss signal rose, read by an alert or not. */
  anySignal: number;
  /** The deltas of the first run whose signals were not as expected. */
  mismatch?: string;
  clientMismatch?: string;
}

const rows: Score[] = [];

async function measure(fw: Forkwatch, scenario: Scenario): Promise<Score> {
  const snapshot = async () => {
    const m = await fw.metrics();
    return Object.fromEntries((Object.keys(SIGNALS) as Signal[]).map(k => [k, SIGNALS[k](m)])) as Record<
      Signal,
      number
    >;
  };
  const score: Score = {
    name: scenario.name,
    lossy: scenario.lossy,
    truthHeld: 0,
    exact: 0,
    clientExact: 0,
    alertRead: 0,
    clientAlertRead: 0,
    eitherAlertRead: 0,
    clientPageRead: 0,
    anySignal: 0,
  };
  for (let i = 0; i < RUNS; i++) {
    const before = await snapshot();
    const clientBefore = clientValues(await fw.metrics());
    let childClient: Record<ClientSignal, number> | undefined;
    if (await scenario.run(m => (childClient = clientValues(m)))) score.truthHeld++;
    const expected = Object.entries(scenario.expected) as [Signal, number][];
    await until(async () => {
      const now = await snapshot();
      return expected.every(([k, n]) => now[k] - before[k] >= n);
    }, `${scenario.name}: its signals`).catch(() => undefined);
    // The client decides "re-issued or not" for each broken exchange when the app re-issues or the window passes.
    const clientDelta = async () => {
      if (scenario.clientProcess) return childClient ?? clientValues('');
      const now = clientValues(await fw.metrics());
      return Object.fromEntries((Object.keys(now) as ClientSignal[]).map(k => [k, now[k] - clientBefore[k]])) as Record<
        ClientSignal,
        number
      >;
    };
    await until(
      async () => {
        const d = await clientDelta();
        return d.reissued + d.not_reissued >= d.broken + d.ended_early;
      },
      `${scenario.name}: the client's re-issue decisions`,
      WINDOW_MS + 5_000,
    ).catch(() => undefined);
    // Late completions and late close notices settle.
    await sleep(300);
    const after = await snapshot();
    const client = await clientDelta();
    const allClient = Object.keys(CLIENT_SIGNALS) as ClientSignal[];
    if (allClient.every(k => client[k] === (scenario.client[k] ?? 0))) score.clientExact++;
    else score.clientMismatch ??= JSON.stringify(client);
    const clientAlert = CLIENT_ALERT_READ.some(k => client[k] > 0);
    if (clientAlert) score.clientAlertRead++;
    if (CLIENT_PAGE_READ.some(k => client[k] > 0)) score.clientPageRead++;
    const delta = (k: Signal) => after[k] - before[k];
    const all = Object.keys(SIGNALS) as Signal[];
    if (all.every(k => delta(k) === (scenario.expected[k] ?? 0))) score.exact++;
    else score.mismatch ??= JSON.stringify(Object.fromEntries(all.map(k => [k, delta(k)])));
    if (ALERT_READ.some(k => delta(k) > 0)) score.alertRead++;
    if (clientAlert || ALERT_READ.some(k => delta(k) > 0)) score.eitherAlertRead++;
    if ([...ALERT_READ, ...UNREAD].some(k => delta(k) > 0)) score.anySignal++;
  }
  rows.push(score);
  return score;
}

afterAll(() => {
  const of = (n: number) => `${n}/${RUNS}`;
  const lines = rows.map(r =>
    [
      r.name,
      r.lossy ? 'lossy' : 'lossless',
      of(r.truthHeld),
      `${of(r.exact)} / ${of(r.clientExact)}`,
      r.lossy ? of(r.anySignal) : '—',
      r.lossy ? of(r.alertRead) : '—',
      r.lossy ? of(r.clientAlertRead) : '—',
      r.lossy ? of(r.eitherAlertRead) : '—',
      r.lossy ? '—' : of(r.alertRead),
      r.lossy ? '—' : of(r.clientPageRead),
    ].join(' | '),
  );
  process.stderr.write(
    `\n| scenario (${RUNS} runs each) | ground truth | held | signals exactly as expected (server / client) | ` +
      'lossy runs with any server signal | lossy runs with a server signal an alert reads | lossy runs with a ' +
      'client signal an alert reads | lossy runs with an alert-read signal on either side | false server signals ' +
      'an alert reads on lossless runs | false client signals a page reads on lossless runs |\n' +
      `|---|---|---|---|---|---|---|---|---|---|\n${lines.map(l => `| ${l} |`).join('\n')}\n`,
  );
});

/** Calls `name` through `client`, cuts `cutter` once the tool runs; resolves whether the call still succeeded. */
async function callAndCut(
  replica: Replica,
  client: LabClient,
  cutter: Cutter,
  name: string,
  args: object,
  onCut: () => void = () => {},
) {
  const before = replica.truth.executions[name] ?? 0;
  const call = client.callTool({ name, arguments: args }).then(
    () => true,
    () => false,
  );
  await until(() => (replica.truth.executions[name] ?? 0) > before, `${name} to start`);
  cutter.cut();
  onCut();
  return call;
}

/**
 * A client process of its own calling one tool, with forkwatch loaded by `forkwatch/register` and its metrics on a
 * Prometheus endpoint; `kill()` SIGKILLs it (a client that died), `scrapeAndExit()` reads its metrics once the call
 * returned, then lets it exit.
 */
async function clientProcess(url: string, name: string, args: object) {
  const port = await leasePort();
  const child = spawn(
    process.execPath,
    [
      '--require',
      join(root, 'build/src/register.js'),
      join(__dirname, 'fixtures/one-call-client.cjs'),
      url,
      name,
      JSON.stringify(args),
    ],
    {
      cwd: root,
      env: { ...process.env, OTEL_EXPORTER_PROMETHEUS_PORT: String(port), OTEL_TRACES_EXPORTER: 'none' },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', c => (out += c));
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)));
  return {
    exited,
    output: () => out,
    kill: () => child.kill('SIGKILL'),
    async scrapeAndExit() {
      await until(
        () => out.includes('DONE') || child.exitCode !== null,
        'the client process to finish its call',
        20_000,
      );
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      child.stdin.end();
      return { metrics, code: await exited };
    },
  };
}

/**
 * Every lossy run raises a signal some alert reads on one side at least; no lossless run raises a client signal a
 * page reads.
 */
function expectBothSides(scenario: Scenario, score: Score) {
  expect(score.clientExact, `${scenario.name}: client signals ${score.clientMismatch}`).toBe(RUNS);
  if (scenario.lossy) expect(score.eitherAlertRead, `${scenario.name}: detected`).toBe(RUNS);
  else expect(score.clientPageRead, `${scenario.name}: false client page signals`).toBe(0);
}

const rejects = (p: Promise<unknown>) =>
  p.then(
    () => false,
    () => true,
  );

describe('issue 40: breaks the server hears late or never, and breaks that lose nothing', () => {
  test('closes the server sees: loopback, a late close notice, HAProxy with and without abortonclose', async () => {
    const fw = setupForkwatch({ perRequest: { reissueWindowMs: WINDOW_MS } }, serverSdk);
    const started: { close(): Promise<unknown> }[] = [];
    const clients: LabClient[] = [];
    const client = async (url: string) => {
      const c = await connectClient(url);
      clients.push(c);
      return c;
    };
    try {
      const a = await startReplica();
      started.push(a);
      const cutter = await startCutter(a.url);
      const lateCutter = await startCutter(a.url, { upstreamCloseDelayMs: CLOSE_NOTICE_DELAY_MS });
      started.push(cutter, lateCutter);
      const abortBalancer: Balancer = await startBalancer(a.url, { abortOnClose: true });
      started.push({ close: abortBalancer.stop });
      const hidingBalancer: Balancer = await startBalancer(a.url, { abortOnClose: false });
      started.push({ close: hidingBalancer.stop });
      const cutAbort = await startCutter(abortBalancer.url);
      const cutHiding = await startCutter(hidingBalancer.url);
      started.push(cutAbort, cutHiding);
      const direct = await client(a.url);
      const viaCutter = await client(cutter.url);
      const viaLate = await client(lateCutter.url);
      const viaAbort = await client(cutAbort.url);
      const viaHiding = await client(cutHiding.url);
      let key = 0;
      const runs = (name: string) => a.truth.executions[name] ?? 0;

      const scenarios: Scenario[] = [
        {
          name: 'fast re-issue: the server hears of the break 1 s late, after the re-issue arrived',
          lossy: true,
          expected: { late_result: 1, duplicate_risk: 1, slo_bad: 1, delivered: 1 },
          client: { broken: 1, reissued: 1, completed: 1 },
          run: async () => {
            const args = { ms: 2_000, key: `f${key++}` };
            const before = runs('write_record');
            let cutAt = 0;
            const broken = !(await callAndCut(a, viaLate, lateCutter, 'write_record', args, () => {
              cutAt = Date.now();
            }));
            const again = viaLate.callTool({ name: 'write_record', arguments: args });
            await until(() => runs('write_record') === before + 2, 'the re-issue to start');
            // The order this scenario is about: the re-issue ran before the server's close notice.
            const beatTheNotice = Date.now() - cutAt < CLOSE_NOTICE_DELAY_MS;
            await again;
            return broken && beatTheNotice;
          },
        },
        {
          name: 'healthy control: the same call twice in a row, and twice at once',
          lossy: false,
          expected: { delivered: 4 },
          client: { completed: 4 },
          run: async () => {
            const args = { ms: 20, key: `s${key++}` };
            await viaLate.callTool({ name: 'write_record', arguments: args });
            await viaLate.callTool({ name: 'write_record', arguments: args });
            const both = { ms: 20, key: `p${key++}` };
            await Promise.all([1, 2].map(() => viaLate.callTool({ name: 'write_record', arguments: both })));
            return true;
          },
        },
        {
          name: 'honoured cancel after commit, re-issued: committed twice',
          lossy: true,
          // Counted apart from the probable re-issues: the app's own cancel-and-call-again looks the same.
          expected: { reissue_after_cancel: 1, delivered: 1 },
          client: { broken: 1, reissued: 1, completed: 1 },
          run: async () => {
            const args = { ms: 300, key: `c${key++}` };
            const stopped = a.truth.honouredCancel;
            const broken = !(await callAndCut(a, viaCutter, cutter, 'commit_then_check', args));
            await until(() => a.truth.honouredCancel === stopped + 1, 'the handler to honour the cancel');
            await viaCutter.callTool({ name: 'commit_then_check', arguments: args });
            return broken && a.truth.commits[args.key] === 2;
          },
        },
        {
          name: 'healthy control: the app cancels a call that commits first, and does not re-issue it',
          lossy: false,
          expected: {},
          client: { cancelled: 1 },
          run: async () => {
            const args = { ms: 2_000, key: `k${key++}` };
            const stopped = a.truth.honouredCancel;
            const controller = new AbortController();
            const before = runs('commit_then_check');
            const call = rejects(
              direct.callTool({ name: 'commit_then_check', arguments: args }, { signal: controller.signal }),
            );
            await until(() => runs('commit_then_check') > before, 'the call to start');
            controller.abort();
            const cancelled = await call;
            await until(() => a.truth.honouredCancel === stopped + 1, 'the handler to honour the cancel');
            return cancelled && a.truth.commits[args.key] === 1;
          },
        },
        {
          name: 'app cancel storm: 10 calls cancelled at once, their handlers finishing late',
          lossy: false,
          expected: { late_result: 10 },
          client: { cancelled: 10 },
          run: async () => {
            const done = a.truth.completedAfterAbort;
            const before = runs('write_record');
            const controller = new AbortController();
            const calls = Array.from({ length: 10 }, () =>
              rejects(
                direct.callTool(
                  { name: 'write_record', arguments: { ms: 300, key: `x${key++}` } },
                  { signal: controller.signal },
                ),
              ),
            );
            await until(() => runs('write_record') === before + 10, 'the 10 calls to start');
            controller.abort();
            const cancelled = await Promise.all(calls);
            await until(() => a.truth.completedAfterAbort === done + 10, 'the 10 late completions');
            return cancelled.every(Boolean);
          },
        },
        {
          name: 'healthy control: 10 calls at once, none cancelled',
          lossy: false,
          expected: { delivered: 10 },
          client: { completed: 10 },
          run: async () => {
            const calls = Array.from({ length: 10 }, () =>
              direct.callTool({ name: 'write_record', arguments: { ms: 300, key: `y${key++}` } }),
            );
            return (await Promise.all(calls)).every(r => r.content[0].text.startsWith('wrote'));
          },
        },
        {
          name: 'client crash: the client process SIGKILLed mid-call',
          lossy: false,
          // The client's connect is an exchange of its own (delivered).
          expected: { late_result: 1, delivered: 1 },
          // SIGKILLed, the client process counted nothing on its own side.
          client: {},
          clientProcess: true,
          run: async () => {
            const done = a.truth.completedAfterAbort;
            const before = runs('write_record');
            const child = await clientProcess(a.url, 'write_record', { ms: 400, key: `d${key++}` });
            await until(() => runs('write_record') > before, 'the call to start', 20_000);
            child.kill();
            const code = await child.exited;
            await until(() => a.truth.completedAfterAbort === done + 1, 'the late completion');
            return code === null && !child.output().includes('DONE');
          },
        },
        {
          name: 'healthy control: the client process finishes its call and exits',
          lossy: false,
          expected: { delivered: 2 },
          // Its connect and its call.
          client: { completed: 2 },
          clientProcess: true,
          run: async clientScraped => {
            const child = await clientProcess(a.url, 'write_record', { ms: 50, key: `e${key++}` });
            const { metrics, code } = await child.scrapeAndExit();
            clientScraped(metrics);
            return code === 0 && child.output().includes('DONE wrote');
          },
        },
        {
          name: 'HAProxy with abortonclose: cut mid-call, re-issued',
          lossy: true,
          expected: { late_result: 1, duplicate_risk: 1, slo_bad: 1, delivered: 1 },
          client: { broken: 1, reissued: 1, completed: 1 },
          run: async () => {
            const args = { ms: 300, key: `ar${key++}` };
            const before = runs('write_record');
            const broken = !(await callAndCut(a, viaAbort, cutAbort, 'write_record', args));
            await viaAbort.callTool({ name: 'write_record', arguments: args });
            return broken && runs('write_record') === before + 2;
          },
        },
        {
          name: 'HAProxy with abortonclose: cut mid-call, not re-issued (only the client can tell it from a cancel)',
          lossy: true,
          expected: { late_result: 1 },
          client: { broken: 1, not_reissued: 1 },
          run: async () => {
            const done = a.truth.completedAfterAbort;
            const broken = !(await callAndCut(a, viaAbort, cutAbort, 'write_record', { ms: 300, key: `an${key++}` }));
            await until(() => a.truth.completedAfterAbort === done + 1, 'the late completion');
            return broken;
          },
        },
        {
          name: 'healthy control: a call through HAProxy with abortonclose',
          lossy: false,
          expected: { delivered: 1 },
          client: { completed: 1 },
          run: async () => {
            const r = await viaAbort.callTool({ name: 'write_record', arguments: { ms: 50, key: `ah${key++}` } });
            return r.content[0].text.startsWith('wrote');
          },
        },
        {
          name: 'HAProxy without abortonclose, not declared: cut mid-call, not re-issued (the server cannot know)',
          lossy: true,
          expected: { delivered: 1 },
          client: { broken: 1, not_reissued: 1 },
          run: async () => {
            const done = a.truth.completedAfterAbort;
            const broken = !(await callAndCut(a, viaHiding, cutHiding, 'write_record', { ms: 300, key: `hn${key++}` }));
            await sleep(400);
            // The handler never saw an abort: the balancer kept the server's side open and took the result.
            return broken && a.truth.completedAfterAbort === done;
          },
        },
        {
          name: 'healthy control: a call through HAProxy without abortonclose, not declared',
          lossy: false,
          expected: { delivered: 1 },
          client: { completed: 1 },
          run: async () => {
            const r = await viaHiding.callTool({ name: 'write_record', arguments: { ms: 50, key: `hh${key++}` } });
            return r.content[0].text.startsWith('wrote');
          },
        },
      ];
      const scores = [];
      for (const scenario of scenarios) scores.push({ scenario, score: await measure(fw, scenario) });
      for (const { scenario, score } of scores) {
        expect(score.truthHeld, `${scenario.name}: ground truth`).toBe(RUNS);
        expect(score.exact, `${scenario.name}: signals ${score.mismatch}`).toBe(RUNS);
        expectBothSides(scenario, score);
      }
    } finally {
      await Promise.all(clients.map(c => c.close().catch(() => {})));
      for (const s of started.reverse()) await s.close().catch(() => {});
      await fw.teardown();
    }
  }, 600_000);

  test('behind HAProxy without abortonclose, declared (perRequest.balancerHidesCloses)', async () => {
    const fw = setupForkwatch({ perRequest: { reissueWindowMs: WINDOW_MS, balancerHidesCloses: true } }, serverSdk);
    const started: { close(): Promise<unknown> }[] = [];
    const clients: LabClient[] = [];
    try {
      const a = await startReplica();
      started.push(a);
      const hidingBalancer = await startBalancer(a.url, { abortOnClose: false });
      started.push({ close: hidingBalancer.stop });
      const cutHiding = await startCutter(hidingBalancer.url);
      started.push(cutHiding);
      const viaHiding = await connectClient(cutHiding.url);
      clients.push(viaHiding);
      let key = 0;
      const runs = (name: string) => a.truth.executions[name] ?? 0;
      const scenarios: Scenario[] = [
        {
          name: 'HAProxy without abortonclose, declared: cut mid-call, re-issued while the first still runs',
          lossy: true,
          expected: { duplicate_risk: 1, slo_bad: 1, unconfirmed: 2 },
          client: { broken: 1, reissued: 1, completed: 1 },
          run: async () => {
            const args = { ms: 600, key: `dr${key++}` };
            const before = runs('write_record');
            const broken = !(await callAndCut(a, viaHiding, cutHiding, 'write_record', args));
            await viaHiding.callTool({ name: 'write_record', arguments: args });
            return broken && runs('write_record') === before + 2;
          },
        },
        {
          name: 'HAProxy without abortonclose, declared: cut mid-call, not re-issued (the server cannot know)',
          lossy: true,
          expected: { unconfirmed: 1 },
          client: { broken: 1, not_reissued: 1 },
          run: async () => {
            const done = a.truth.completedAfterAbort;
            const broken = !(await callAndCut(a, viaHiding, cutHiding, 'write_record', { ms: 300, key: `dn${key++}` }));
            await sleep(400);
            return broken && a.truth.completedAfterAbort === done;
          },
        },
        {
          name: 'healthy control: calls through HAProxy without abortonclose, declared (twice in a row)',
          lossy: false,
          expected: { unconfirmed: 2 },
          client: { completed: 2 },
          run: async () => {
            const args = { ms: 50, key: `dh${key++}` };
            const first = await viaHiding.callTool({ name: 'write_record', arguments: args });
            const second = await viaHiding.callTool({ name: 'write_record', arguments: args });
            return [first, second].every(r => r.content[0].text.startsWith('wrote'));
          },
        },
      ];
      const scores = [];
      for (const scenario of scenarios) scores.push({ scenario, score: await measure(fw, scenario) });
      for (const { scenario, score } of scores) {
        expect(score.truthHeld, `${scenario.name}: ground truth`).toBe(RUNS);
        expect(score.exact, `${scenario.name}: signals ${score.mismatch}`).toBe(RUNS);
        expectBothSides(scenario, score);
      }
    } finally {
      await Promise.all(clients.map(c => c.close().catch(() => {})));
      for (const s of started.reverse()) await s.close().catch(() => {});
      await fw.teardown();
    }
  }, 300_000);
});
