/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// A fleet score (score.mjs) as text for the terminal and docs/fleet.md.
const n = (v, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '–');
const pct = v => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : '–');
const kb = v => (Number.isFinite(v) ? `${(v / 1024).toFixed(1)} KiB` : '–');

export function formatScore(s) {
  const lines = [];
  lines.push(`## ${s.policy}: ${s.story}`);
  lines.push(
    `${s.sessions} sessions (+${s.crashedSessions} in the crashed client, ${s.crashedSessionsScored} scored), ${s.resumes} resumes, ${s.duplicateResumes} duplicate resumes, ${s.cursorlessReconnects} cursor-less reconnects, ${s.failovers} failovers, ${(s.durationMs / 1000).toFixed(0)} s`,
  );
  lines.push(
    `ground truth: ${s.eventsEmitted} events confirmed, ${s.lostEvents} lost in ${s.lossySessions} sessions (${s.eventsUnconfirmed} unconfirmed emits, ${s.sessionErrors} session errors)`,
  );
  if (s.sessionsUnstarted)
    lines.push(`sessions that never started (no session id): ${s.sessionsUnstarted}: ${s.unstartedErrors.join(' | ')}`);
  lines.push(
    `false alarms: client ${s.falseAlarms.client} forked (${n(s.falseAlarms.clientPer10kResumes, 1)} per 10k resumes), server ${s.falseAlarms.server} (${n(s.falseAlarms.serverPer10kResumes, 1)} per 10k), on ${s.falseAlarms.sessions} sessions; client rejected/inconclusive on lossless sessions ${s.falseAlarms.clientRejectedOrInconclusive}; signals on ${s.falseAlarms.losslessMovedSessions} lossless sessions that moved between replicas ${s.falseAlarms.signalsOnLosslessMovedSessions}`,
  );
  lines.push(
    `recall: client ${pct(s.recall.client)} (any of forked/rejected/inconclusive ${pct(s.recall.clientAnyBad)}), server ${pct(s.recall.server)}, either ${pct(s.recall.either)}`,
  );
  lines.push(
    s.ledger
      ? `server ledger: undelivered ${s.ledger.loss} loss events (stream_moved ${s.ledger.stream_moved}, no_listener ${s.ledger.no_listener}, dropped ${s.ledger.dropped}; shared store: ${s.ledger.shared.unreplayed} stored and not replayed here, ${s.ledger.shared.replayedUnpending} replayed elsewhere-stored, balance ${s.ledger.shared.balance}; fleet marks: ${s.ledger.fleet ? `${s.ledger.fleet.total} (deleted ${s.ledger.fleet.session_deleted}, fresh stream ${s.ledger.fleet.fresh_stream}, overdue ${s.ledger.fleet.overdue})` : '–'}), abandoned ${s.ledger.abandoned}; ground truth lost ${s.ledger.lostEventsGroundTruth} (event recall ${pct(s.ledger.eventRecall)})`
      : 'server ledger: not in this build (forkwatch_server_undelivered_events_total absent)',
  );
  lines.push(
    `client outcomes ${JSON.stringify(s.clientOutcomes)}, forks by reason ${JSON.stringify(s.clientForkReasons)}; server outcomes ${JSON.stringify(s.serverOutcomes)}`,
  );
  const l = s.verdictLatencyMs;
  lines.push(
    `verdict latency ms: client p50 ${n(l.client.p50)} p95 ${n(l.client.p95)} max ${n(l.client.max)}; server p50 ${n(l.server.p50, 1)} p95 ${n(l.server.p95, 1)} max ${n(l.server.max, 1)}`,
  );
  for (const side of ['clients', 'servers']) {
    const c = s.costs[side];
    lines.push(
      `${side}: CPU ${n(c.cpuMsPerSession.with, 1)} ms/session with forkwatch vs ${n(c.cpuMsPerSession.without, 1)} without (×${n(c.cpuMsPerSession.ratio, 2)}), ${n(c.cpuUsPerEvent.with)} µs/event with forkwatch vs ${n(c.cpuUsPerEvent.without)} without (×${n(c.cpuUsPerEvent.ratio, 2)}); heap ${kb(c.heapPerSessionBytes.with)}/session vs ${kb(c.heapPerSessionBytes.without)}`,
    );
  }
  if (s.alerts) {
    const entries = Object.entries(s.alerts.alerts);
    lines.push(
      `alerts (Prometheus, shipped rules): ${entries.length ? entries.map(([a, st]) => `${a} ${st}`).join(', ') : 'none pending or firing'}; forkwatch series ${JSON.stringify(s.alerts.series)}`,
    );
  }
  if (s.soak) {
    for (const p of s.soak.processes) {
      lines.push(
        `soak ${p.name}${p.telemetry ? '' : ' (no forkwatch)'}: heap ${n(p.firstHeapMiB, 1)} → ${n(p.lastHeapMiB, 1)} MiB with ${n(p.firstOpenSessions)} → ${n(p.lastOpenSessions)} sessions open`,
      );
    }
    lines.push(
      `soak forkwatch series: ${s.soak.series.map(x => `${n(x.atMs / 60000, 0)} min ${x['fleet-client'] ?? '–'}/${x['fleet-server'] ?? '–'}`).join(', ')} (clients/servers)`,
    );
  }
  for (const e of s.events) lines.push(`  ${n(e.atMs / 1000, 1)} s  ${e.text}`);
  return `${lines.join('\n')}\n`;
}
