#!/usr/bin/env node
/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fork lab: reproduces a real silent fork with the real MCP SDK on 127.0.0.1 and shows, for each scenario,
// what the application saw beside what forkwatch reported.
//
//   npm run lab                      healthy, silent fork, live fork (CommonJS client)
//   node lab/run.mjs --all           every scenario
//   node lab/run.mjs --scenario fail-loud --esm
//   node lab/run.mjs --json          the raw reports
//   node lab/run.mjs --client ai-sdk  the app on @ai-sdk/mcp (test/sdk-versions/ai-sdk-mcp), judged on the wire
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { SCENARIOS, runLabScenario } from './harness.mjs';

const startedAt = performance.now();

const args = process.argv.slice(2);
const flag = name => args.includes(name);
const optionValue = name => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const aiSdk = optionValue('--client') === 'ai-sdk';
/** @ai-sdk/mcp only resumes its GET stream after an error, never drops its cursor and never resumes POST streams. */
const AI_SDK_SCENARIOS = ['healthy', 'live-fork-integer-ids', 'fail-loud'];
const chosen = optionValue('--scenario')
  ? [optionValue('--scenario')]
  : flag('--all')
    ? aiSdk
      ? AI_SDK_SCENARIOS
      : Object.keys(SCENARIOS)
    : aiSdk
      ? AI_SDK_SCENARIOS.slice(0, 2)
      : ['healthy', 'silent-fork', 'live-fork-integer-ids'];
const clientOptions = aiSdk
  ? { client: 'ai-sdk', resolveFrom: new URL('../test/sdk-versions/ai-sdk-mcp', import.meta.url).pathname }
  : {};
const moduleSystem = flag('--esm') ? 'esm' : 'cjs';
const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code, text) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
const red = t => paint('31;1', t);
const green = t => paint('32;1', t);
const dim = t => paint('2', t);

const require = createRequire(import.meta.url);
// The SDK's exports map `./*` into dist/, so its package.json is found from a file inside it.
const sdkPackageJson = require
  .resolve('@modelcontextprotocol/sdk/client/index.js')
  .replace(/dist[\\/]cjs[\\/].*$/, 'package.json');
const sdkVersion = JSON.parse(readFileSync(sdkPackageJson, 'utf8')).version;

function metric(text, name, labels = {}) {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(' ').pop());
  }
  return total;
}

function describeAttempt(span) {
  const first = span.events.find(e => e.name === 'forkwatch.resume.first_frame')?.attributes ?? {};
  const cursor = span.events[0]?.attributes?.['forkwatch.resume.cursor'];
  const outcome = first['forkwatch.resume.outcome'];
  const reason = first['forkwatch.resume.reason'];
  const firstId = first['forkwatch.resume.first_event_id'];
  const gap = first['forkwatch.resume.gap_seconds'];
  const status = span.attributes['http.response.status_code'];
  const label =
    outcome === 'forked'
      ? red(`FORKED (${reason})`)
      : outcome === 'resumed'
        ? green('resumed')
        : `${outcome}${reason ? ` (${reason})` : ''}`;
  const parts = [label];
  if (cursor !== undefined) parts.push(`cursor ${cursor}`);
  else parts.push('no cursor sent although one was held');
  if (firstId !== undefined) parts.push(`first id ${firstId}`);
  if (status !== undefined) parts.push(`HTTP ${status}`);
  if (gap !== undefined) parts.push(`gap ${Number(gap).toFixed(2)} s`);
  return parts.join(dim(' · '));
}

function describeServers(report) {
  if (!report.servers) return [];
  return Object.entries(report.servers).map(([name, view]) => {
    const lossy = ['unknown_cursor', 'ignored', 'cross_session', 'completed_stream'];
    const outcomes = [
      'replayed',
      'unknown_cursor',
      'ignored',
      'rejected',
      'failed',
      'cross_session',
      'completed_stream',
    ]
      .map(o => [o, metric(view.metrics, 'forkwatch_server_resumes_total', { outcome: o })])
      .filter(([, n]) => n > 0)
      .map(([o, n]) => `${o === 'replayed' ? green(o) : lossy.includes(o) ? red(o) : o} ×${n}`);
    const replayed = metric(view.metrics, 'forkwatch_server_resume_gap_events_sum');
    const undelivered = serverLossEvents(view.metrics);
    return `process ${name}: ${outcomes.length ? outcomes.join(', ') : 'no resumes'}${outcomes.length ? dim(` · ${replayed} events replayed`) : ''}${undelivered ? ` · ${red(`${undelivered} undelivered`)}` : ''}`;
  });
}

/** What the servers flagged: resumes they could not serve from the session's log, and undelivered events. */
function serverCatches(report) {
  return Object.entries(report.servers ?? {}).flatMap(([name, view]) => {
    const flagged = ['unknown_cursor', 'ignored']
      .map(o => [o, metric(view.metrics, 'forkwatch_server_resumes_total', { outcome: o })])
      .filter(([, n]) => n > 0)
      .map(([o, n]) => `${o} ×${n} on ${name}`);
    const undelivered = serverLossEvents(view.metrics);
    return undelivered > 0 ? [...flagged, `${undelivered} undelivered on ${name}`] : flagged;
  });
}

/** Which side caught the fork: the client's verdict, the servers' signals, or both (the README's who-sees-what). */
function caughtBy(clientForked, serverSignals, attempts) {
  const clientSaw = attempts.map(span => span.attributes['forkwatch.resume.outcome'] ?? '?').join(', ') || 'no resume';
  if (clientForked && serverSignals.length > 0)
    return `caught by forkwatch on both sides: the client (forked) and the server (${serverSignals.join(', ')})`;
  if (clientForked) return 'caught by forkwatch on the client side (forked); the servers flagged nothing';
  return `caught by forkwatch on the server side only (${serverSignals.join(', ')}); the client saw ${clientSaw}`;
}

/** Undelivered events with a loss reason, what the server delivery SLO pages on. */
function serverLossEvents(text) {
  return ['stream_moved', 'no_listener', 'dropped'].reduce(
    (n, reason) => n + metric(text, 'forkwatch_server_undelivered_events_total', { reason }),
    0,
  );
}

let failures = 0;
const reports = [];
const parts = aiSdk
  ? `the @ai-sdk/mcp client and @modelcontextprotocol/sdk ${sdkVersion} servers`
  : `the real @modelcontextprotocol/sdk ${sdkVersion} client and servers`;
console.log(`forkwatch fork lab: ${parts} on 127.0.0.1, ${moduleSystem} client\n`);
for (const name of chosen) {
  // A loss only the servers can see is judged after their delivery window: a short one here, and the client goes on
  // talking past it, as a live client does.
  const serverSide = SCENARIOS[name]?.judgedByServers
    ? { serverInstrumentation: { deliveryWindowMs: 2000 }, deliveryVerdicts: true }
    : {};
  const report = await runLabScenario(name, { moduleSystem, ...clientOptions, ...serverSide });
  reports.push(report);
  if (flag('--json')) continue;
  const resumes = report.httpLog.filter(
    e => e.kind === 'resume' || (e.kind === 'get' && report.httpLog.indexOf(e) > 2),
  );
  const statuses = resumes.map(
    e =>
      `${e.lastEventId ? `GET Last-Event-ID ${e.lastEventId.length > 24 ? `${e.lastEventId.slice(0, 21)}…` : e.lastEventId}` : 'GET (no Last-Event-ID)'} → ${e.status}`,
  );
  const fromLog = report.received.filter(d => d.origin === 'A').length;
  const foreign = report.received.length - fromLog;
  const received = `${fromLog} received${foreign ? ` (${red(`+ ${foreign} from another process's log`)})` : ''}`;
  const lostText = report.lost.length
    ? red(`${report.lost.length} LOST (#${report.lost.join(' #')})`)
    : green('none lost');
  const forks = metric(report.metrics, 'forkwatch_client_forks_total');
  const duplicates = metric(report.metrics, 'forkwatch_client_duplicate_events_total');
  console.log(paint('1', `━━ ${name}`) + dim(`: ${report.story}`));
  console.log(`  what the app saw      ${report.emittedByA} sent by the session's server, ${received}, ${lostText}`);
  if (report.duplicatesSeenByApp)
    console.log(`                        ${red(`${report.duplicatesSeenByApp} delivered twice`)}`);
  if (report.errors.some(e => e.name === 'StreamForkDetected'))
    console.log(`                        onerror: ${red('StreamForkDetected')}`);
  console.log(`                        after the drop: ${statuses.join(dim(', ')) || 'no reconnect'}`);
  const attempts = report.spans.filter(s => s.name === 'forkwatch.client.resume');
  attempts.forEach((span, i) => {
    console.log(
      `  ${i === 0 ? 'what forkwatch says ' : '                    '}  resume ${i + 1}: ${describeAttempt(span)}`,
    );
  });
  if (duplicates) console.log(`                        duplicate events counted: ${duplicates}`);
  describeServers(report).forEach((line, i) => {
    console.log(`  ${i === 0 ? "the servers' view   " : '                    '}  ${line}`);
  });
  if (report.serverStory) console.log(`                        ${dim(report.serverStory)}`);
  const silentLoss =
    report.lost.length > 0 && report.httpLog.filter(e => e.kind === 'resume').every(e => e.status === 200);
  const serverSignals = serverCatches(report);
  const caughtByServers = serverSignals.length > 0;
  const caught = forks > 0 || caughtByServers;
  const ok = name === 'healthy' ? !caught && report.lost.length === 0 : !silentLoss || caught;
  if (!ok) failures++;
  const verdict =
    name === 'healthy'
      ? ok
        ? green('no fork, nothing lost, nothing reported')
        : red('unexpected report on a healthy resume')
      : silentLoss
        ? caught
          ? green(`silent loss behind HTTP 200 — ${caughtBy(forks > 0, serverSignals, attempts)}`)
          : red('silent loss NOT caught')
        : 'loss was visible (non-2xx): reported as rejected';
  console.log(`  ${paint('1', '→')} ${verdict}\n`);
}
if (flag('--json')) console.log(JSON.stringify(reports, null, 2));
// The README's "about 40 s" is this line's figure (stderr, so that --json stays one document).
console.error(`fork lab: ${chosen.length} scenarios in ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
process.exit(failures ? 1 : 0);
