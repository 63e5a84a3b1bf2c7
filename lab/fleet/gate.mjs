/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The fleet lab's floors (issue 49): on the real parts, a lossy policy must be caught by the signals the shipped
// alerts read and page in the lab's Prometheus; a lossless one must count no loss and raise nothing.
// `npm run fleet` exits non-zero when a policy misses its floor.

/** Lossy policies: at least this share of lossy sessions and of lost events counted as proven loss. */
export const LOSSY_FLOORS = {
  'haproxy-rr-redis': { sessions: 0.95, events: 0.9 },
  'nginx-rr-redis': { sessions: 0.95, events: 0.9 },
  'haproxy-rr-local': { sessions: 0.95, events: 0.9 },
};
export const LOSSLESS = ['haproxy-sticky-redis', 'nginx-hash-redis', 'haproxy-rolling-redis', 'haproxy-sigkill-redis'];
/** The page that reads the servers' delivery SLI, where the fleet's marks count. */
export const LOSS_PAGE = 'ForkwatchServerDeliveryBudgetBurn';
/** Raised by a scrape that timed out on a starved machine, not by what the fleet did: reported, never gated. */
export const LAB_HEALTH_ALERTS = ['ForkwatchMetricsAbsent'];

const pct = x => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '–');
const alertNames = score => Object.keys(score.alerts?.alerts ?? {}).map(a => a.split(' ')[0]);

/** Loss events counted beyond what the sessions really lost (and, without per-session marks, beyond the total). */
export function countedFalsely(score) {
  const m = score.fleetMarks;
  if (m?.present) return m.countedOnLossless + m.countedBeyondLost;
  const ledger = score.ledger;
  return ledger ? Math.max(0, ledger.loss - score.lostEvents - score.eventsUnconfirmed) : 0;
}

/** The floors a score misses, in words: empty when it passes (or its policy has no floor). */
export function gateFailures(score) {
  const failures = [];
  const floor = LOSSY_FLOORS[score.policy];
  const alerts = alertNames(score);
  if (floor) {
    if (score.lossySessions === 0) failures.push('no session lost anything: the split brain did not happen');
    if (!(score.recall.alertSessions >= floor.sessions))
      failures.push(`lossy sessions counted ${pct(score.recall.alertSessions)} < ${pct(floor.sessions)}`);
    if (!(score.recall.alertEvents >= floor.events))
      failures.push(`lost events counted ${pct(score.recall.alertEvents)} < ${pct(floor.events)}`);
    if (!alerts.includes(LOSS_PAGE)) failures.push(`${LOSS_PAGE} neither pending nor firing`);
  } else if (LOSSLESS.includes(score.policy)) {
    const falsely = countedFalsely(score);
    if (falsely > 0) failures.push(`${falsely} loss events counted beyond what the sessions lost`);
    if (score.lostEvents > 0) failures.push(`the lossless policy lost ${score.lostEvents} events (ground truth)`);
    const raised = alerts.filter(a => !LAB_HEALTH_ALERTS.includes(a));
    if (raised.length > 0) failures.push(`alerts pending or firing: ${raised.join(', ')}`);
  }
  return failures;
}

/** One line per policy for the table the lab prints at the end. */
export function gateRow(score) {
  const m = score.fleetMarks;
  const failures = gateFailures(score);
  return [
    score.policy,
    `${score.lostEvents} lost in ${score.lossySessions}/${score.sessions}`,
    `sessions ${pct(score.recall.alertSessions)}`,
    `events ${pct(score.recall.alertEvents)}`,
    `marks ${m?.present ? `${m.countedLost}+${m.countedBeyondLost} beyond+${m.countedOnLossless} lossless+${m.countedUnscored} crashed` : '–'}`,
    `page ${alertNames(score).includes(LOSS_PAGE) ? 'yes' : 'no'}`,
    failures.length
      ? `FAIL: ${failures.join('; ')}`
      : LOSSY_FLOORS[score.policy] || LOSSLESS.includes(score.policy)
        ? 'ok'
        : 'no floor',
  ].join(' | ');
}
