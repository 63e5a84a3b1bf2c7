/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Scores a fleet run (fleet.mjs) against its ground truth: every session numbered its events, so a session that
// lost any is lossy; forkwatch's per-session verdicts (client spans, server spans) and counters are the signals.
//
//   client loss signal: a client resume verdict `forked` (any reason): what ForkwatchForksDetected pages on; the
//                       wider set adds `rejected` and `inconclusive` (the client SLO's other bad resumes)
//   server loss signal: a server resume outcome `unknown_cursor` or `ignored`, per session (spans); and the delivery
//                       ledger's forkwatch_server_undelivered_events_total{reason=~loss reasons}, per process (no
//                       session label: scored by events, ledger loss events against ground-truth lost events)
//   false alarm: a loss signal on a session that lost nothing and never moved between replicas, per 10,000 resumes (GETs with Last-Event-ID through
//                the router). The crashed client's sessions count as lossless for the server side unless the router
//                moved them (failover) or routes per request: then their ground truth is unknown and they are left out
//   recall: lossy sessions with at least one signal / lossy sessions
import { quantile } from '../../bench/stats.mjs';

const CLIENT_LOSS = outcome => outcome.startsWith('forked');
const CLIENT_BAD = outcome => CLIENT_LOSS(outcome) || outcome === 'rejected' || outcome === 'inconclusive';
const SERVER_LOSS = outcome => outcome === 'unknown_cursor' || outcome === 'ignored';
const LEDGER_LOSS_REASONS = ['stream_moved', 'no_listener', 'dropped'];
const FLEET_REASONS = ['session_deleted', 'fresh_stream', 'overdue'];

function counterSum(text, name, labels = {}) {
  let total = 0;
  for (const line of String(text ?? '').split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (
      Object.entries(labels).every(([k, v]) =>
        v instanceof RegExp ? new RegExp(`${k}="${v.source}"`).test(line) : line.includes(`${k}="${v}"`),
      )
    ) {
      total += Number(line.split(' ').pop());
    }
  }
  return total;
}
const hasFamily = (text, name) => String(text ?? '').includes(`${name}{`);

function mergeSignals(reports) {
  const merged = new Map();
  for (const r of reports) {
    for (const [session, outcomes] of Object.entries(r.signals ?? {})) {
      const m = merged.get(session) ?? {};
      for (const [o, n] of Object.entries(outcomes)) m[o] = (m[o] ?? 0) + n;
      merged.set(session, m);
    }
  }
  return merged;
}
const countWhere = (outcomes = {}, pred) => Object.entries(outcomes).reduce((n, [o, c]) => n + (pred(o) ? c : 0), 0);
const latency = values => ({
  n: values.length,
  p50: quantile(values, 0.5),
  p95: quantile(values, 0.95),
  max: values.length ? Math.max(...values) : NaN,
});
const mean = values => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);

function costs(instrumented, control) {
  const per = p => ({
    name: p.name,
    cpuMsPerSession: p.process.cpuUs / 1000 / (p.sessionsCreated ?? p.sessions.length),
    cpuUsPerEvent: p.process.cpuUsPerEvent,
    heapPerSessionBytes: p.process.heapPerSessionBytes,
    events: p.process.events,
    peakOpenSessions: p.process.peakOpenSessions,
  });
  const with_ = instrumented.map(per);
  const without = control ? per(control) : undefined;
  const cpu = mean(with_.map(p => p.cpuUsPerEvent).filter(Number.isFinite));
  const heap = mean(with_.map(p => p.heapPerSessionBytes).filter(Number.isFinite));
  const perSession = mean(with_.map(p => p.cpuMsPerSession).filter(Number.isFinite));
  return {
    processes: with_,
    control: without,
    cpuMsPerSession: {
      with: perSession,
      without: without?.cpuMsPerSession,
      ratio: without ? perSession / without.cpuMsPerSession : NaN,
    },
    cpuUsPerEvent: { with: cpu, without: without?.cpuUsPerEvent, ratio: without ? cpu / without.cpuUsPerEvent : NaN },
    heapPerSessionBytes: {
      with: heap,
      without: without?.heapPerSessionBytes,
      delta: without ? heap - without.heapPerSessionBytes : NaN,
    },
  };
}

/**
 * Soak: does the heap (after GC) stay flat? Per process, the median heap of the first and the last fifth of the
 * samples after a warm-up (the first 10% of the samples), and the open sessions then.
 */
function soak(run) {
  const per = p => {
    const all = p.process.samples;
    const warm = all.slice(Math.floor(all.length / 10));
    const fifth = Math.max(1, Math.floor(warm.length / 5));
    const median = xs => quantile(xs, 0.5);
    const first = warm.slice(0, fifth);
    const last = warm.slice(-fifth);
    return {
      name: p.name,
      telemetry: p.telemetry,
      samples: all.length,
      firstHeapMiB: median(first.map(x => x.heap)) / 2 ** 20,
      lastHeapMiB: median(last.map(x => x.heap)) / 2 ** 20,
      firstOpenSessions: median(first.map(x => x.openSessions)),
      lastOpenSessions: median(last.map(x => x.openSessions)),
    };
  };
  return {
    processes: [...run.clients, run.controlClient, ...run.servers, run.controlServer].filter(Boolean).map(per),
    series: run.alerts?.seriesSamples ?? [],
  };
}

export function scoreFleet(run) {
  const sessions = run.clients.flatMap(c => c.sessions).filter(s => s.session);
  // Sessions that never got an id (initialize failed or timed out: a starved machine): not scored, but counted.
  const unstarted = run.clients.flatMap(c => c.sessions).filter(s => !s.session);
  const crashed = new Set(run.crashedSessions);
  const clientSignals = mergeSignals(run.clients);
  const serverSignals = mergeSignals(run.servers);
  const routerCounts = run.router.counts;
  const movable = run.policy === 'round-robin';
  const crashedScored = [...crashed].filter(session => !movable && !(routerCounts[session]?.failovers > 0));
  const scored = [
    ...sessions.map(s => ({ ...s, crashed: false })),
    ...crashedScored.map(session => ({ session, lost: 0, emitted: 0, crashed: true })),
  ];
  const resumesOf = s => routerCounts[s.session]?.resumes ?? 0;
  const resumes = scored.reduce((n, s) => n + resumesOf(s), 0);
  const lossy = sessions.filter(s => s.lost > 0);
  const lossless = scored.filter(s => !(s.lost > 0));
  const stayed = lossless.filter(s => (routerCounts[s.session]?.replicas?.length ?? 0) <= 1);
  // A session whose requests reached several replicas can fork without losing anything (nothing was sent in
  // the gap): such signals are counted apart. A session that never moved has no excuse.
  const moved = s => (routerCounts[s.session]?.replicas?.length ?? 0) > 1;
  const movedSignals = lossless
    .filter(moved)
    .reduce(
      (n, s) =>
        n +
        countWhere(clientSignals.get(s.session), CLIENT_LOSS) +
        countWhere(serverSignals.get(s.session), SERVER_LOSS),
      0,
    );
  const clientFalse = stayed
    .filter(s => !s.crashed)
    .reduce((n, s) => n + countWhere(clientSignals.get(s.session), CLIENT_LOSS), 0);
  const serverFalse = stayed.reduce((n, s) => n + countWhere(serverSignals.get(s.session), SERVER_LOSS), 0);
  const falseAlarmSessions = stayed.filter(
    s =>
      countWhere(clientSignals.get(s.session), CLIENT_LOSS) + countWhere(serverSignals.get(s.session), SERVER_LOSS) > 0,
  );
  const caughtClient = lossy.filter(s => countWhere(clientSignals.get(s.session), CLIENT_LOSS) > 0);
  const caughtClientOrInconclusive = lossy.filter(s => countWhere(clientSignals.get(s.session), CLIENT_BAD) > 0);
  const clientSoftFalse = stayed
    .filter(s => !s.crashed)
    .reduce((n, s) => n + countWhere(clientSignals.get(s.session), o => CLIENT_BAD(o) && !CLIENT_LOSS(o)), 0);
  const caughtServer = lossy.filter(s => countWhere(serverSignals.get(s.session), SERVER_LOSS) > 0);
  const caughtEither = lossy.filter(s => caughtClient.includes(s) || caughtServer.includes(s));

  const serverMetrics = run.servers.map(s => s.metrics);
  const ledgerPresent = serverMetrics.some(m => hasFamily(m, 'forkwatch_server_undelivered_events_total'));
  const ledger = Object.fromEntries(
    ['stream_moved', 'no_listener', 'dropped', 'abandoned'].map(reason => [
      reason,
      serverMetrics.reduce((n, m) => n + counterSum(m, 'forkwatch_server_undelivered_events_total', { reason }), 0),
    ]),
  );
  // With a shared store (sharedEventStore), what replicas stored and did not replay themselves is loss only past
  // what other replicas replayed that was not pending on them: the fleet balance of the recording rules.
  const sum = (name, labels) => serverMetrics.reduce((n, m) => n + counterSum(m, name, labels), 0);
  const shared = {
    unreplayed: sum('forkwatch_server_shared_unreplayed_events_total'),
    unreplayedNoListener: sum('forkwatch_server_shared_unreplayed_events_total', { reason: 'no_listener' }),
    replayedUnpending: sum('forkwatch_server_replayed_unpending_events_total'),
  };
  shared.balance = Math.max(0, shared.unreplayed - shared.replayedUnpending);
  // The fleet's delivery marks (issue 49): each event claimed by one replica, so the sum counts it once.
  const fleet = Object.fromEntries(
    FLEET_REASONS.map(reason => [reason, sum('forkwatch_server_fleet_undelivered_events_total', { reason })]),
  );
  fleet.total = FLEET_REASONS.reduce((n, r) => n + fleet[r], 0);
  const judgedLoss = LEDGER_LOSS_REASONS.reduce((n, r) => n + ledger[r], 0);
  const ledgerLoss = judgedLoss + shared.balance + fleet.total;
  const lostEvents = sessions.reduce((n, s) => n + s.lost, 0);
  const outcomeTotals = (reports, name) => {
    const totals = {};
    for (const r of reports) {
      for (const line of String(r.metrics).split('\n')) {
        const m = new RegExp(`^${name}\\{.*outcome="([a-z_]+)".*\\} (\\d+)`).exec(line);
        if (m && Number(m[2])) totals[m[1]] = (totals[m[1]] ?? 0) + Number(m[2]);
      }
    }
    return totals;
  };
  // Per session, the events the fleet's marks counted (the lab's replicas note which session each claim was for).
  const fleetClaims = new Map();
  for (const server of run.servers) {
    for (const [session, n] of Object.entries(server.fleetClaims ?? {})) {
      fleetClaims.set(session, (fleetClaims.get(session) ?? 0) + n);
    }
  }
  const scoredIds = new Set(scored.map(s => s.session));
  const claimsOn = list => list.reduce((n, s) => n + (fleetClaims.get(s.session) ?? 0), 0);
  const marks = {
    present: run.servers.some(s => s.fleetClaims !== undefined),
    // counted on lossy sessions, at most what each lost; beyond that, and on lossless sessions: counted falsely
    countedLost: lossy.reduce((n, s) => n + Math.min(fleetClaims.get(s.session) ?? 0, s.lost), 0),
    // An emit that timed out stored events that may be lost: counting them is not counting beyond the loss.
    countedBeyondLost: lossy.reduce(
      (n, s) => n + Math.max(0, (fleetClaims.get(s.session) ?? 0) - s.lost - (s.unconfirmed ?? 0)),
      0,
    ),
    countedOnLossless: claimsOn(lossless.filter(s => !s.crashed)),
    // the crash victim's sessions: what they lost before the crash no ground truth sees
    countedUnscored:
      claimsOn(scored.filter(s => s.crashed)) +
      [...fleetClaims].reduce((n, [session, c]) => n + (scoredIds.has(session) ? 0 : c), 0),
    sessionsCaught: lossy.filter(s => (fleetClaims.get(s.session) ?? 0) > 0).length,
  };
  // Recall by the signals the shipped alerts read: the servers' delivery SLI (ForkwatchServerDeliveryBudgetBurn:
  // the fleet's marks, per session from the lab's notes), resume outcomes (ForkwatchServerUnknownCursors,
  // ForkwatchServerCursorsIgnored) and client forks (ForkwatchForksDetected).
  const alertCaught = lossy.filter(
    s =>
      (fleetClaims.get(s.session) ?? 0) > 0 ||
      countWhere(serverSignals.get(s.session), SERVER_LOSS) > 0 ||
      countWhere(clientSignals.get(s.session), CLIENT_LOSS) > 0,
  );
  const per10k = n => (resumes ? (n / resumes) * 10_000 : NaN);
  const ratio = (a, b) => (b ? a / b : NaN);
  return {
    policy: run.policy,
    story: run.story,
    options: run.options,
    durationMs: run.durationMs,
    events: run.events,
    sessions: sessions.length,
    crashedSessions: crashed.size,
    crashedSessionsScored: crashedScored.length,
    sessionErrors: sessions.filter(s => s.error).length,
    sessionsUnstarted: unstarted.length,
    unstartedErrors: [...new Set(unstarted.map(s => String(s.error).slice(0, 120)))].slice(0, 3),
    resumes,
    cursorlessReconnects: run.router.totals.cursorless,
    duplicateResumes: run.router.totals.duplicates,
    failovers: run.router.totals.failovers,
    eventsEmitted: sessions.reduce((n, s) => n + s.emitted, 0),
    eventsUnconfirmed: sessions.reduce((n, s) => n + (s.unconfirmed ?? 0), 0),
    lostEvents,
    lossySessions: lossy.length,
    // What each lossy session went through, to read when a control that should lose nothing did (issue 47).
    lossyDetail: lossy.map(s => ({
      session: String(s.session).slice(0, 8),
      lost: s.lost,
      emitted: s.emitted,
      unconfirmed: s.unconfirmed ?? 0,
      route: routerCounts[s.session] ?? {},
      client: clientSignals.get(s.session) ?? {},
      server: serverSignals.get(s.session) ?? {},
      fleetClaims: fleetClaims.get(s.session) ?? 0,
    })),
    falseAlarms: {
      client: clientFalse,
      server: serverFalse,
      sessions: falseAlarmSessions.length,
      clientPer10kResumes: per10k(clientFalse),
      clientRejectedOrInconclusive: clientSoftFalse,
      signalsOnLosslessMovedSessions: movedSignals,
      losslessMovedSessions: lossless.filter(moved).length,
      serverPer10kResumes: per10k(serverFalse),
    },
    recall: {
      client: ratio(caughtClient.length, lossy.length),
      clientAnyBad: ratio(caughtClientOrInconclusive.length, lossy.length),
      server: ratio(caughtServer.length, lossy.length),
      either: ratio(caughtEither.length, lossy.length),
      // What the shipped alerts read: sessions with a loss signal of theirs; events, by the fleet's marks per session
      // when the replicas keep them, else the ledger's events (no session label) against the events lost.
      alertSessions: ratio(alertCaught.length, lossy.length),
      alertEvents: marks.present
        ? ratio(marks.countedLost, lostEvents)
        : ratio(Math.min(ledgerLoss, lostEvents), lostEvents),
    },
    fleetMarks: marks,
    // Counters carry no session: the ledger is scored by events (its loss events against the events really lost).
    ledger: ledgerPresent
      ? {
          ...ledger,
          judged: judgedLoss,
          shared,
          fleet,
          loss: ledgerLoss,
          lostEventsGroundTruth: lostEvents,
          eventRecall: ratio(Math.min(ledgerLoss, lostEvents), lostEvents),
        }
      : null,
    clientOutcomes: outcomeTotals(run.clients, 'forkwatch_client_resumes_total'),
    clientForkReasons: Object.fromEntries(
      ['id_missing', 'id_regressed', 'id_reused', 'stream_changed', 'cursor_dropped']
        .map(reason => [
          reason,
          run.clients.reduce((n, c) => n + counterSum(c.metrics, 'forkwatch_client_forks_total', { reason }), 0),
        ])
        .filter(([, count]) => count > 0),
    ),
    serverOutcomes: outcomeTotals(run.servers, 'forkwatch_server_resumes_total'),
    verdictLatencyMs: {
      client: latency(run.clients.flatMap(c => c.latencyMs)),
      server: latency(run.servers.flatMap(s => s.latencyMs)),
    },
    costs: { clients: costs(run.clients, run.controlClient), servers: costs(run.servers, run.controlServer) },
    alerts: run.alerts ?? null,
    soak: run.options.soakMs ? soak(run) : null,
  };
}
