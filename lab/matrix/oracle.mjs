/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The matrix's judge: what was lost (what the servers sent against what the app received), which side could
// prove it, what forkwatch counted on each side (deltas of its Prometheus scrapes), and the three invariants:
//   (a) no page-read signal on a lossless run;
//   (b) every loss provable from a side is counted (a page-read signal) by that side, and events a living
//       store-less server wrote to a connection that died (no proof either way) are at least exposure on it;
//   (c) every lossy run is at least exposure on the client.
// Page-read signals are the series the pack's critical (paging) alerts read: alerts/forkwatch-alerts.rules.yml
// (ForkwatchResumeLossBudgetBurn, ForkwatchClientResultsLost, ForkwatchServerCrossSessionReplay,
// ForkwatchServerDeliveryBudgetBurn, ForkwatchServerResultDeliveryBudgetBurn) through the recording rules.
import { createRequire } from 'node:module';
import { ID_FORMATS } from './ids.mjs';

/** `name{labels}` → value, for forkwatch's series of one scrape. */
export function parseScrape(text) {
  const out = new Map();
  for (const line of String(text ?? '').split('\n')) {
    const m = /^(forkwatch_[a-zA-Z0-9_]+)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m) out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

/** after − before, per series, the zeros left out. */
export function delta(after, before = new Map()) {
  const out = {};
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0 && !key.includes('_bucket') && !key.endsWith('_sum') && !key.includes('instrumentation_info'))
      out[key] = d;
  }
  return out;
}

const sum = (series, name, labelPattern) =>
  Object.entries(series)
    .filter(([key]) => {
      const m = /^([a-z_]+)(\{.*\})?$/.exec(key);
      return m && m[1] === name && (!labelPattern || labelPattern.test(m[2] ?? ''));
    })
    .reduce((total, [, value]) => total + value, 0);

// Exposure is read from the evidence table itself (src/core/evidence.ts through names.ts' evidenceSeries): every
// series the table calls exposure, per side, never a list of the oracle's own that could drift from it.
const { evidenceSeries } = createRequire(import.meta.url)('../../build/src/shared/names.js');
const EXPOSURE_SERIES = evidenceSeries('exposure');

/** The series the oracle reads, by side and kind (test/matrix checks them against names.ts and the alerts). */
export const ORACLE_SERIES = {
  page: [
    'forkwatch_client_resumes_total',
    'forkwatch_client_reissues_total',
    'forkwatch_server_undelivered_events_total',
    'forkwatch_server_resumes_total',
    'forkwatch_server_shared_unreplayed_events_total',
    'forkwatch_server_replayed_unpending_events_total',
    'forkwatch_server_probable_reissues_total',
  ],
  exposure: [...new Set(EXPOSURE_SERIES.map(e => e.prometheusName))],
};

/** What pages, from one side's series (a fleet's summed over its processes). */
export const PAGE_SIGNALS = {
  client: s => ({
    forked: sum(s, 'forkwatch_client_resumes_total', /outcome="forked"/),
    results_lost: sum(s, 'forkwatch_client_reissues_total', /outcome="not_reissued"/),
  }),
  server: s => ({
    undelivered: sum(s, 'forkwatch_server_undelivered_events_total', /reason="(stream_moved|no_listener|dropped)"/),
    cross_session: sum(s, 'forkwatch_server_resumes_total', /outcome="cross_session"/),
    fleet_unreplayed: Math.max(
      0,
      sum(s, 'forkwatch_server_shared_unreplayed_events_total') -
        sum(s, 'forkwatch_server_replayed_unpending_events_total'),
    ),
    probable_reissues: sum(s, 'forkwatch_server_probable_reissues_total'),
  }),
};

/** One side's exposure, by evidence subject (`client_empty_reconnect`: 1): every exposure series of the table. */
const exposureOf = side => s => {
  const out = {};
  for (const e of EXPOSURE_SERIES) {
    if (!e.subject.startsWith(`${side}_`)) continue;
    const n = sum(s, e.prometheusName, e.label === undefined ? undefined : new RegExp(`${e.label}="${e.value}"`));
    if (n > 0) out[e.subject] = (out[e.subject] ?? 0) + n;
  }
  return out;
};

/** What is exposure (counted, shown, never paged), per side. */
export const EXPOSURE_SIGNALS = { client: exposureOf('client'), server: exposureOf('server') };

const total = signals => Object.values(signals).reduce((t, v) => t + v, 0);

/**
 * Can the client prove a loss from the ids it consumed? Between two consecutive events it received: another log
 * whose counter went back (a fresh log: a fork), or, with a counter per stream whose density it had learned (two
 * consecutive ids seen), the same log skipping ids of events it never received.
 */
export function clientProof(cell, received, lostKeys, sentByKey) {
  const spec = ID_FORMATS[cell.ids];
  if (!spec || spec.order === 'none' || cell.behaviour === 'none' || cell.behaviour === 'stateless') return undefined;
  const events = received.filter(e => e.eventId !== undefined);
  let dense = false;
  for (let i = 1; i < events.length; i++) {
    const prev = events[i - 1];
    const next = events[i];
    const a = spec.seq(prev.eventId);
    const b = spec.seq(next.eventId);
    if (prev.log !== next.log) {
      if (b <= a) return `${next.eventId} after ${prev.eventId}: another log, its counter went back`;
      continue;
    }
    if (spec.order === 'stream' && dense && b > a + 1) {
      const skipped = [...lostKeys].filter(k => {
        const e = sentByKey.get(k);
        return e?.log === prev.log && e.seq > a && e.seq < b;
      });
      if (skipped.length) return `${next.eventId} after ${prev.eventId}: ${b - a - 1} ids skipped on a dense stream`;
    }
    if (b === a + 1) dense = true;
  }
  return undefined;
}

/**
 * Can a server prove it? A lost event was sent by a process still there to judge it (not the origin a restart or
 * SIGKILL took away before its delivery window ran): it knows it stored or wrote the event and never delivered it.
 * Not an event a store-less process wrote to a connection that then died (`writtenLive`): whether those bytes were
 * read, no process can tell and nothing can replay them (the server counts them in_flight, exposure).
 */
export function serverProof(_cell, lostKeys, goneTags, writtenLive = new Set()) {
  const provable = [...lostKeys].filter(k => !goneTags.has(k.split(':')[0]) && !writtenLive.has(k));
  return provable.length ? `${provable.length} lost events sent by a process that lived to judge them` : undefined;
}

/** The verdict of one cell from its raw record (lab/matrix/worker.mjs). */
export function judge(record) {
  const receivedKeys = new Set(record.received.map(e => e.key));
  const lost = record.sent.filter(k => !receivedKeys.has(k));
  const lostKeys = new Set(lost);
  const spec = ID_FORMATS[record.cell.ids];
  const sentByKey = new Map(
    (record.stored ?? []).map(e => [e.key, { log: e.log, seq: e.eventId ? spec.seq(e.eventId) : undefined }]),
  );
  const client = { page: PAGE_SIGNALS.client(record.client), exposure: EXPOSURE_SIGNALS.client(record.client) };
  const server = { page: PAGE_SIGNALS.server(record.server), exposure: EXPOSURE_SIGNALS.server(record.server) };
  const lossy = lost.length > 0;
  const clientPaged = total(client.page) > 0;
  const serverPaged = total(server.page) > 0;
  const clientExposure = total(client.exposure) > 0;
  const serverExposure = total(server.exposure) > 0;
  const goneTags = new Set(record.goneTags ?? []);
  const writtenLive = new Set(record.writtenLive ?? []);
  const proof = {
    client: lossy ? clientProof(record.cell, record.received, lostKeys, sentByKey) : undefined,
    server: lossy ? serverProof(record.cell, lostKeys, goneTags, writtenLive) : undefined,
  };
  // Lost events a living store-less process wrote to a connection that died: no proof, but never silent there.
  const inFlight = [...writtenLive].filter(k => lostKeys.has(k) && !goneTags.has(k.split(':')[0]));
  const violations = [];
  if (!lossy && (clientPaged || serverPaged)) violations.push('a');
  if (
    lossy &&
    ((proof.client && !clientPaged) ||
      (proof.server && !serverPaged) ||
      (inFlight.length > 0 && !serverPaged && !serverExposure))
  )
    violations.push('b');
  if (lossy && !clientPaged && !clientExposure) violations.push('c');
  return {
    name: record.cell.name,
    cell: record.cell,
    sent: record.sent.length,
    received: record.received.length,
    lost: lost.length,
    lossy,
    paged: clientPaged || serverPaged,
    clientPaged,
    serverPaged,
    clientExposure,
    serverExposure,
    proof,
    inFlight: inFlight.length,
    violations,
    counted: { client: record.client, server: record.server },
    error: record.error,
    ms: record.ms,
    lostBy: Object.fromEntries(
      [...new Set(lost.map(k => k.split(':')[0]))].map(t => [t, lost.filter(k => k.startsWith(`${t}:`)).length]),
    ),
    gone: record.goneTags,
    routes: record.routesSeen,
  };
}
