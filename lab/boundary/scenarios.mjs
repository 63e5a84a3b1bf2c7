/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The boundary lab's scenarios: replays that cross a session or a stream boundary, each with its healthy controls.
// Each names its server replicas (LAB_SERVER configs, see server-app.cjs), the sessions and which replica each one
// talks to, the workload (workloads.mjs) and the ground truth it expects.
const shared = (backend, keys) => ({ store: { shared: backend, keys }, hydrate: true });
const integerIds = { store: { idFormat: 'integer' }, hydrate: true };

/** Victim s1 and its neighbours: s1's standalone stream is cut, everybody emits, s1 resumes on `resumeVia`. */
const leakSessions = replicas =>
  replicas === 1
    ? [
        { name: 's1', via: 'A' },
        { name: 's2', via: 'A' },
      ]
    : [
        { name: 's1', via: 'A' },
        { name: 's2', via: 'B' },
        { name: 's3', via: 'A' },
        { name: 's4', via: 'B' },
      ];

export const BOUNDARY_SCENARIOS = {
  'cross-session-one-process': {
    story:
      "one store object for every session of the process, the SDK's `_GET_stream` key, cursors resolved correctly: " +
      "s1's resume replays s2's notifications",
    replicas: { A: shared('memory', 'sdk') },
    sessions: leakSessions(1),
    workload: 'standalone-leak',
    crosses: 'cross_session',
  },
  'per-session-keys-one-process': {
    story: 'healthy control: the same, with the store keyed by session',
    replicas: { A: shared('memory', 'per-session') },
    sessions: leakSessions(1),
    workload: 'standalone-leak',
  },
  'refuse-foreign-one-process': {
    story: 'healthy control: per-session keys, and cursors of other sessions refused (getStreamIdForEventId)',
    replicas: { A: shared('memory', 'refuse-foreign') },
    sessions: leakSessions(1),
    workload: 'standalone-leak',
  },
  'cross-session-replicas': {
    story:
      "two replicas, one Redis store with the SDK's `_GET_stream` key: s1 (replica A) resumes and gets the " +
      'notifications of s2, s4 (replica B) and s3 (replica A)',
    redis: true,
    replicas: { A: shared('redis', 'sdk'), B: shared('redis', 'sdk') },
    sessions: leakSessions(2),
    workload: 'standalone-leak',
    crosses: 'cross_session',
  },
  'cross-session-failover': {
    story: 'the same Redis store; s1 resumes on replica B (a failover), which replays s2, s3 and s4 to it',
    redis: true,
    replicas: { A: shared('redis', 'sdk'), B: shared('redis', 'sdk') },
    sessions: leakSessions(2),
    resumeVia: 'B',
    workload: 'standalone-leak',
    crosses: 'cross_session',
  },
  'cross-session-lone-replica': {
    story:
      'the documented miss: s1 fails over to replica B, whose only session s2 stored its events before a second ' +
      'session used the store there, and s3 is on replica A: no leaked event is known to B as another session’s',
    redis: true,
    replicas: { A: shared('redis', 'sdk'), B: shared('redis', 'sdk') },
    sessions: [
      { name: 's1', via: 'A' },
      { name: 's2', via: 'B' },
      { name: 's3', via: 'A' },
    ],
    resumeVia: 'B',
    workload: 'standalone-leak',
    crosses: 'cross_session',
    knownMiss: true,
  },
  'per-session-keys-replicas': {
    story: 'healthy control: two replicas, Redis keyed by session',
    redis: true,
    replicas: { A: shared('redis', 'per-session'), B: shared('redis', 'per-session') },
    sessions: leakSessions(2),
    resumeVia: 'B',
    workload: 'standalone-leak',
  },
  'refuse-foreign-replicas': {
    story: 'healthy control: two replicas, Redis keyed by session, foreign cursors refused',
    redis: true,
    replicas: { A: shared('redis', 'refuse-foreign'), B: shared('redis', 'refuse-foreign') },
    sessions: leakSessions(2),
    resumeVia: 'B',
    workload: 'standalone-leak',
  },
  'reference-store-replicas': {
    story: "healthy control: two replicas on the reference deployment's Redis store (deploy/), s1 fails over",
    redis: true,
    replicas: { A: shared('redis', 'deploy'), B: shared('redis', 'deploy') },
    sessions: leakSessions(2),
    resumeVia: 'B',
    workload: 'standalone-leak',
  },
  'colliding-ids': {
    story:
      "per-replica integer ids: a tool call's stream on replica B is cut and resumes on replica A, where the " +
      'cursor is an id of an earlier, completed tool call stream of the session',
    replicas: { A: integerIds, B: integerIds },
    sessions: [{ name: 's1', via: 'A' }],
    workload: 'colliding-ids',
    crosses: 'completed_stream',
  },
  'request-stream-resume-here': {
    story: "healthy control: a tool call's stream is cut and resumes on the replica that runs it",
    replicas: { A: integerIds },
    sessions: [{ name: 's1', via: 'A' }],
    workload: 'request-stream-resume',
  },
};
