/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The numbers of a per-request fleet run: every series of forkwatch's protocol 2026-07-28 families (names and label
// values read from the build's src/shared/names, the contract), per replica and per client, as the difference of
// two scrapes, set against the ground truth the tools, the replicas' HTTP layer and the clients kept.
//
// Roles: `activity` is the traffic itself; `cancel` is what the app's own cancellations explain (a honoured cancel
// closes its exchange before the response: a 499); everything else is a loss or doubling signal, 0 when healthy.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { assertBuilt, root } from './processes.mjs';

assertBuilt();
const { METRICS, labelCombinations } = createRequire(import.meta.url)(join(root, 'build/src/shared/names.js'));

export const SERVER_FAMILIES = [
  'serverExchanges',
  'serverLateMessages',
  'serverProbableReissues',
  'serverListenPublishes',
  'serverOrphanedTasks',
  'serverTaskMisses',
];
export const CLIENT_FAMILIES = [
  'clientExchanges',
  'clientReissues',
  'clientReissueDelaySeconds',
  'clientListenStreams',
  'clientListenGapSeconds',
];
const ROLES = {
  'serverExchanges{outcome="delivered"}': 'activity',
  'serverExchanges{outcome="closed_before_response"}': 'cancel',
  'serverListenPublishes{outcome="listened"}': 'activity',
  'clientExchanges{outcome="completed"}': 'activity',
  'clientExchanges{outcome="cancelled"}': 'cancel',
  // The app closed its listen stream (the end of every listen here).
  'clientListenStreams{outcome="cancelled"}': 'activity',
  // The server ended a listen stream gracefully: nothing lost, and nothing here does it.
  'clientListenStreams{outcome="closed"}': 'activity',
};

/** Every series of the families: { id, key, name (as scraped), labels, role }. Histograms by their `_count`. */
export function seriesOf(families) {
  return families.flatMap(key => {
    const spec = METRICS[key];
    const name = spec.kind === 'histogram' ? `${spec.prometheusName}_count` : spec.prometheusName;
    return labelCombinations(spec).map(labels => {
      const id = `${key}{${Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(',')}}`;
      return { id, key, name, labels, role: ROLES[id] ?? 'loss' };
    });
  });
}
export const SERVER_SERIES = seriesOf(SERVER_FAMILIES);
export const CLIENT_SERIES = seriesOf(CLIENT_FAMILIES);

/** The sum of the samples of `name` carrying every label of `labels` (0 when absent). */
export function sampleSum(text, name, labels) {
  let sum = 0;
  for (const line of String(text ?? '').split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Series id -> value after minus before (before may be undefined: a fresh process). */
export function signals(series, after, before) {
  return Object.fromEntries(
    series.map(s => [s.id, sampleSum(after, s.name, s.labels) - (before ? sampleSum(before, s.name, s.labels) : 0)]),
  );
}

const sumRole = (series, values, role) => series.filter(s => s.role === role).reduce((n, s) => n + values[s.id], 0);
const sumTable = (table, pred = () => true) =>
  Object.entries(table ?? {}).reduce((n, [k, v]) => n + (pred(k) ? v : 0), 0);
const diffTables = (after = {}, before = {}) =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
/** A POST that is one exchange (replica.cjs's method keys): a request, not a listen stream, not a notification. */
export const isExchange = method => method !== 'subscriptions/listen' && method !== '(notification)';

/** One replica: its signals and its ground truth over the run (truth and scrapes before and after). */
export function scoreReplica(name, { before, after }) {
  const values = signals(SERVER_SERIES, after.metrics, before?.metrics);
  const http = {
    received: diffTables(after.truth.http.received, before?.truth.http.received),
    finished: diffTables(after.truth.http.finished, before?.truth.http.finished),
    closedEarly: diffTables(after.truth.http.closedEarly, before?.truth.http.closedEarly),
  };
  const d = key => after.truth[key] - (before?.truth[key] ?? 0);
  const exchanges = {
    delivered: values['serverExchanges{outcome="delivered"}'],
    closedBeforeResponse: values['serverExchanges{outcome="closed_before_response"}'],
    closedMidStream: values['serverExchanges{outcome="closed_mid_stream"}'],
  };
  return {
    name,
    exchanges,
    signals: values,
    loss: sumRole(SERVER_SERIES, values, 'loss'),
    truth: {
      exchangesReceived: sumTable(http.received, isExchange),
      exchangesAnswered: sumTable(http.finished, isExchange),
      exchangesClosedEarly: sumTable(http.closedEarly, isExchange),
      toolCalls: diffTables(after.truth.executions, before?.truth.executions),
      honouredCancel: d('honouredCancel'),
      completedAfterAbort: d('completedAfterAbort'),
      publishes: d('publishes'),
      deliveriesOwed: d('deliveriesOwed'),
      http,
    },
  };
}

export function scoreClient(client) {
  const values = signals(CLIENT_SERIES, client.metrics);
  return { name: client.name, signals: values, loss: sumRole(CLIENT_SERIES, values, 'loss'), truth: client.truth };
}

/** The run: per replica, per client, totals, ground-truth loss, and the false alarms (loss signals on no loss). */
export function scoreRun({ replicas, clients, publishes }) {
  const r = replicas.map(x => scoreReplica(x.name, x));
  const c = clients.map(scoreClient);
  const total = (rows, f) => rows.reduce((n, row) => n + f(row), 0);
  const totals = {
    exchangesForkwatch: total(
      r,
      x => x.exchanges.delivered + x.exchanges.closedBeforeResponse + x.exchanges.closedMidStream,
    ),
    exchangesReceived: total(r, x => x.truth.exchangesReceived),
    delivered: total(r, x => x.exchanges.delivered),
    answered: total(r, x => x.truth.exchangesAnswered),
    closedBeforeResponse: total(r, x => x.exchanges.closedBeforeResponse),
    closedMidStream: total(r, x => x.exchanges.closedMidStream),
    closedEarlyHttp: total(r, x => x.truth.exchangesClosedEarly),
    callsMade: total(c, x => sumTable(x.truth.calls)),
    resultsReceived: total(c, x => sumTable(x.truth.results)),
    cancels: total(c, x => x.truth.cancels),
    clientErrors: total(c, x => x.truth.errors.length),
    honouredCancel: total(r, x => x.truth.honouredCancel),
    completedAfterAbort: total(r, x => x.truth.completedAfterAbort),
    publishes,
    deliveriesOwed: total(r, x => x.truth.deliveriesOwed),
    notificationsReceived: total(c, x => x.truth.notifications),
    serverSignals: Object.fromEntries(SERVER_SERIES.map(s => [s.id, total(r, x => x.signals[s.id])])),
    clientSignals: Object.fromEntries(CLIENT_SERIES.map(s => [s.id, total(c, x => x.signals[s.id])])),
  };
  // Loss the ground truth shows: results thrown away after their exchange closed, calls that failed, publishes owed
  // and not received. 0 on healthy traffic; a loss signal is a false alarm only where this is 0.
  const groundTruthLoss =
    totals.completedAfterAbort +
    totals.clientErrors +
    Math.abs(totals.deliveriesOwed - totals.notificationsReceived) +
    (totals.callsMade - totals.resultsReceived - totals.cancels);
  const lossSignals = total(r, x => x.loss) + total(c, x => x.loss);
  // The 499s and mid-stream closes beyond the exchanges the HTTP layer saw closed early (the clients' cancels).
  const unexplainedCloses = Math.abs(totals.closedBeforeResponse + totals.closedMidStream - totals.closedEarlyHttp);
  const falseAlarms = groundTruthLoss === 0 ? lossSignals + unexplainedCloses : undefined;
  return {
    replicas: r,
    clients: c,
    totals,
    replicasServing: r.filter(x => x.exchanges.delivered > 0).length,
    groundTruthLoss,
    lossSignals,
    unexplainedCloses,
    falseAlarms,
    falseAlarmsPer10k:
      falseAlarms === undefined ? undefined : (falseAlarms / Math.max(1, totals.exchangesReceived)) * 10_000,
  };
}
