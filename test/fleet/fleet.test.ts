/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The CI-sized fleet run on the real parts (docs/fleet.md has the full-size numbers): three replicas of the
 * reference deployment (deploy/) behind Debian's HAProxy with deploy/haproxy/haproxy.cfg, sessions and events in
 * Debian's Redis (or events per replica), client processes with dozens of sessions whose quiet streams the
 * balancer's short idle timeout cuts, a client crash, a real Prometheus scraping them with the shipped rules;
 * scored against the sessions' own event numbering. The home-made router's policies (mid-frame cuts, duplicate
 * resumes) run in `npm run fleet`.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { runFleet } from '../../lab/fleet/fleet.mjs';
// @ts-expect-error: plain ESM module without types
import { scoreFleet } from '../../lab/fleet/score.mjs';
// @ts-expect-error: plain ESM module without types
import { formatScore } from '../../lab/fleet/format.mjs';

// @ts-expect-error: plain ESM module without types
import { LOSS_PAGE, countedFalsely, gateFailures, gateRow } from '../../lab/fleet/gate.mjs';

interface FleetScore {
  policy: string;
  sessions: number;
  sessionErrors: number;
  resumes: number;
  lostEvents: number;
  lossySessions: number;
  /** Each lossy session's route, signals and fleet marks (lab/fleet/score.mjs). */
  lossyDetail: object[];
  eventsEmitted: number;
  /** Events of emits that timed out: stored, maybe lost, never confirmed (ground truth leaves them out). */
  eventsUnconfirmed: number;
  falseAlarms: { client: number; server: number; sessions: number };
  recall: { client: number; server: number; either: number; alertSessions: number; alertEvents: number };
  ledger: {
    loss: number;
    judged: number;
    abandoned: number;
    lostEventsGroundTruth: number;
    eventRecall: number;
    shared: { unreplayed: number; replayedUnpending: number; balance: number };
    fleet: { total: number; session_deleted: number; fresh_stream: number; overdue: number };
  } | null;
  fleetMarks: { present: boolean; countedLost: number; countedBeyondLost: number; countedOnLossless: number };
  clientOutcomes: Record<string, number>;
  serverOutcomes: Record<string, number>;
  alerts: { alerts: Record<string, string>; series: Record<string, number> };
}

/**
 * The CI size (issue 49: the fleet tests together in a few minutes): 24 sessions in 2 client processes, 4 rounds.
 * Each run's gate row goes to the CI log, so how every floor fared is on record, pass or fail.
 */
async function fleet(policy: string): Promise<FleetScore> {
  const score = scoreFleet(await runFleet({ policy, sessions: 24, clients: 2, rounds: 4, prometheus: true }));
  console.log(formatScore(score)); // the numbers, for the CI log
  console.log(`gate: ${gateRow(score)}`);
  return score;
}

const raised = (score: FleetScore, alert: string) =>
  Object.keys(score.alerts.alerts).some(a => a.startsWith(`${alert} `));

describe('fleet lab on HAProxy and Redis, CI size', () => {
  it.each(['haproxy-sticky-redis', 'haproxy-rolling-redis', 'haproxy-sigkill-redis'])(
    "%s (lossless): no loss counted by the fleet's marks or the ledger, no client fork, no alert pending",
    async policy => {
      const score = await fleet(policy);
      // A control that lost in ground truth fails below; what the lossy sessions went through is printed first.
      if (score.lostEvents > 0) console.log(`${policy} lossy sessions:`, JSON.stringify(score.lossyDetail, null, 1));
      // The run really ran: sessions completed, the balancer cut quiet streams, clients resumed, both sides judged.
      expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(16);
      expect(score.resumes).toBeGreaterThanOrEqual(10);
      expect(score.clientOutcomes.resumed).toBeGreaterThanOrEqual(8);
      expect(score.serverOutcomes.replayed).toBeGreaterThanOrEqual(8);
      expect(score.fleetMarks.present).toBe(true);
      expect(score.alerts.series['fleet-server']).toBeGreaterThan(0);
      expect(score.alerts.series['fleet-client']).toBeGreaterThan(0);
      // The shared store is scoped by session: no replay crosses a session or a stream boundary (#23).
      expect(score.serverOutcomes.cross_session ?? 0).toBe(0);
      expect(score.serverOutcomes.completed_stream ?? 0).toBe(0);
      if (policy !== 'haproxy-sticky-redis') {
        // The shape a replica going away leaves (typescript-sdk #2499), named apart and never a fork.
        expect(score.clientOutcomes.cursor_dropped_after_inconclusive ?? 0).toBeGreaterThan(0);
      }
      // Unconditionally (issue 47): no fork, no loss counted, nothing lost, no alert pending or firing (the lab's
      // Prometheus evaluates the shipped rules); only a starved scrape's ForkwatchMetricsAbsent is left out.
      expect(score.clientOutcomes.forked ?? 0).toBe(0);
      expect(score.falseAlarms).toMatchObject({ client: 0, server: 0, sessions: 0 });
      expect(countedFalsely(score)).toBe(0);
      for (const alert of ['ForkwatchForksDetected', 'ForkwatchResumeLossBudgetBurn', LOSS_PAGE]) {
        expect(raised(score, alert), alert).toBe(false);
      }
      expect(gateFailures(score)).toEqual([]);
    },
    600_000,
  );

  it.each(['haproxy-rr-redis', 'haproxy-rr-local'])(
    "%s (split brain): the fleet's marks count at least 95 percent of lossy sessions and 90 percent of lost events, never more than was lost, and the delivery page goes pending",
    async policy => {
      const score = await fleet(policy);
      expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(16);
      expect(score.lossySessions).toBeGreaterThan(0);
      expect(score.fleetMarks.present).toBe(true);
      // With the marks, what one process cannot judge alone is theirs: the fleet balance's counter stays at 0.
      expect(score.ledger!.shared.unreplayed).toBe(0);
      expect(score.ledger!.fleet.total).toBeGreaterThan(0);
      // Each event counted once and only where it was lost. With a store per replica (no shared store, which
      // fleetDelivery assumes) the ids repeat across replicas and the marks, keyed by id per session, over-count
      // a few events: 0 of 570 (60 sessions), 3 of about 150 and 6 of 216 (CI size, 2026-12-06), all on sessions
      // that lost others, until a run whose only lossless session of 24 got 3 (176 lost, 3 beyond). Bounded there
      // at 5 % of the lost events, on lossy and lossless sessions together; exact on the shared store.
      const falsely = score.fleetMarks.countedBeyondLost + score.fleetMarks.countedOnLossless;
      if (policy === 'haproxy-rr-local') expect(falsely).toBeLessThanOrEqual(Math.floor(0.05 * score.lostEvents));
      else expect(falsely).toBe(0);
      expect(score.recall.alertSessions).toBeGreaterThanOrEqual(0.95);
      expect(score.recall.alertEvents).toBeGreaterThanOrEqual(0.9);
      expect(raised(score, LOSS_PAGE)).toBe(true);
      expect(gateFailures(score)).toEqual([]);
    },
    600_000,
  );
});
