/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Server-only recall of the fork lab: runs every scenario (CommonJS, servers instrumented, a 2 s delivery window,
// then the servers expire their sessions) and prints, per scenario, the events the client lost (ground truth) beside
// each server's signals: undelivered events with a loss reason, abandoned events, unknown_cursor/ignored resumes.
//
//   node scripts/build.mjs && node lab/server-recall.mjs
import { SCENARIOS, runLabScenario } from './harness.mjs';

const sum = (metrics, re) =>
  metrics
    .split('\n')
    .filter(l => re.test(l))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
let lossy = 0;
let caught = 0;
let falseAlarms = 0;
for (const name of Object.keys(SCENARIOS)) {
  const r = await runLabScenario(name, {
    moduleSystem: 'cjs',
    serverInstrumentation: { deliveryWindowMs: 2000 },
    deliveryVerdicts: true,
    closeSessions: true,
    timeoutMs: 60000,
  });
  const lost = r.emittedTotal !== undefined ? r.emittedTotal - r.receivedTotal : r.lost.length;
  let signals = 0;
  const per = Object.entries(r.servers).map(([key, s]) => {
    const loss = sum(
      s.metrics,
      /^forkwatch_server_undelivered_events_total\{.*reason="(stream_moved|no_listener|dropped)"/,
    );
    const abandoned = sum(s.metrics, /^forkwatch_server_undelivered_events_total\{.*reason="abandoned"/);
    const resumes = sum(
      s.metrics,
      /^forkwatch_server_resumes_total\{.*outcome="(unknown_cursor|ignored|cross_session|completed_stream)"/,
    );
    signals += loss + resumes;
    return `${key}: loss ${loss}, abandoned ${abandoned}, unknown_cursor/ignored/boundary ${resumes}`;
  });
  if (lost > 0) {
    lossy++;
    if (signals > 0) caught++;
  } else if (signals > 0) falseAlarms++;
  console.log(`${name.padEnd(26)} lost ${String(lost).padStart(2)}   ${per.join('   ')}`);
}
console.log(
  `\nserver-only recall: ${caught}/${lossy} lossy scenarios; false alarms: ${falseAlarms}/${Object.keys(SCENARIOS).length - lossy} healthy ones`,
);
