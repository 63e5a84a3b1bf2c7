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

interface FleetScore {
  sessions: number;
  sessionErrors: number;
  resumes: number;
  lostEvents: number;
  lossySessions: number;
  eventsEmitted: number;
  /** Events of emits that timed out: stored, maybe lost, never confirmed (ground truth leaves them out). */
  eventsUnconfirmed: number;
  falseAlarms: { client: number; server: number; sessions: number };
  recall: { client: number; server: number; either: number };
  ledger: {
    loss: number;
    judged: number;
    abandoned: number;
    lostEventsGroundTruth: number;
    eventRecall: number;
    shared: { unreplayed: number; replayedUnpending: number; balance: number };
  } | null;
  clientOutcomes: Record<string, number>;
  serverOutcomes: Record<string, number>;
  alerts: { alerts: Record<string, string>; series: Record<string, number> };
}

async function fleet(policy: string, sessions: number): Promise<FleetScore> {
  const score = scoreFleet(await runFleet({ policy, sessions, clients: 2, rounds: 4, prometheus: true }));
  console.log(formatScore(score)); // the numbers, for the CI log
  return score;
}

const raised = (score: FleetScore, alert: string) =>
  Object.keys(score.alerts.alerts).some(a => a.startsWith(`${alert} `));

/** The alerts that page (severity critical) that went pending or firing during the run. */
const pages = (score: FleetScore) => Object.keys(score.alerts.alerts).filter(a => a.endsWith(' (critical)'));

describe('fleet lab on HAProxy and Redis, CI size', () => {
  it('sticky on Mcp-Session-Id, events in Redis, quiet streams cut by the idle timeout: no false alarm, no loss counted beyond ground truth', async () => {
    const score = await fleet('haproxy-sticky-redis', 40);
    // The run really ran: sessions completed, the balancer cut quiet streams, clients resumed, both sides judged.
    expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(20);
    expect(score.resumes).toBeGreaterThanOrEqual(20);
    expect(score.clientOutcomes.resumed).toBeGreaterThanOrEqual(15);
    expect(score.serverOutcomes.replayed).toBeGreaterThanOrEqual(15);
    // The shared store is scoped by session: no replay crosses a session or a stream boundary (#23).
    expect(score.serverOutcomes.cross_session ?? 0).toBe(0);
    expect(score.serverOutcomes.completed_stream ?? 0).toBe(0);
    // Replays from the shared store start after the cursor, on every replica: no client counts an event twice.
    for (const alert of [
      'ForkwatchServerCrossSessionReplay',
      'ForkwatchServerCompletedStreamResumed',
      'ForkwatchDuplicateDeliveries',
    ]) {
      expect(raised(score, alert), alert).toBe(false);
    }
    expect(score.alerts.series['fleet-server']).toBeGreaterThan(0);
    expect(score.alerts.series['fleet-client']).toBeGreaterThan(0);
    // Healthy but for the SDK's own race: an event stored while an async store (Redis) replays a resume is written
    // nowhere (typescript-sdk #2558); on a loaded machine a few sessions lose one that way (docs/fleet.md). Real loss,
    // which no client verdict sees; what matters here is that nothing lossless is flagged and the ledger counts no
    // more than was lost.
    expect(score.lossySessions).toBeLessThanOrEqual(Math.ceil(score.sessions / 4));
    expect(score.falseAlarms).toMatchObject({ client: 0, server: 0, sessions: 0 });
    // The ledger, with sharedEventStore: nothing counted beyond what the sessions really lost.
    expect(score.ledger).not.toBeNull();
    expect(score.ledger!.loss).toBeLessThanOrEqual(score.ledger!.lostEventsGroundTruth + score.eventsUnconfirmed);
    for (const alert of ['ForkwatchServerUnknownCursors', 'ForkwatchServerCursorsIgnored']) {
      expect(raised(score, alert), alert).toBe(false);
    }
    if (score.ledger!.loss === 0) expect(raised(score, 'ForkwatchServerDeliveryBudgetBurn')).toBe(false);
  }, 600_000);

  it.each(['haproxy-rolling-redis', 'haproxy-sigkill-redis'])(
    '%s: reconnects that dropped their cursor after a resume without a frame (a replica going away) are no fork and page nothing on the client; with nothing lost, no alert at all, pending included',
    async policy => {
      const score = await fleet(policy, 40);
      expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(20);
      // The shape the restart leaves (typescript-sdk #2499), named apart: docs/fleet.md saw 35 and 7 on a quiet machine.
      expect(score.clientOutcomes.cursor_dropped_after_inconclusive ?? 0).toBeGreaterThan(0);
      // The client's loss alerts read proven forks only (read from the real Prometheus, pending included).
      if ((score.clientOutcomes.forked ?? 0) === 0) {
        for (const alert of ['ForkwatchForksDetected', 'ForkwatchResumeLossBudgetBurn']) {
          expect(raised(score, alert), alert).toBe(false);
        }
      }
      // One restart is no ticket either; a gap that lost events pages on the servers' delivery SLO instead. A starved
      // machine loses events in these runs (docs/fleet.md): then only the ground truth says what should have paged.
      expect(raised(score, 'ForkwatchCursorsDroppedAfterInconclusive')).toBe(false);
      if (score.lostEvents === 0 && score.eventsUnconfirmed === 0) expect(score.alerts.alerts).toEqual({});
    },
    600_000,
  );

  it('round-robin with the shared store (split brain): the fleet balance counts the lost events, never more than were lost', async () => {
    const score = await fleet('haproxy-rr-redis', 40);
    expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(20);
    // Notifications stored on a replica that does not hold the session's GET stream reach the client only when a
    // resume (on any replica) replays them from Redis: round-robin loses some.
    expect(score.lossySessions).toBeGreaterThan(0);
    expect(score.ledger!.shared.unreplayed).toBeGreaterThan(0);
    expect(score.ledger!.loss).toBeGreaterThan(0);
    expect(score.ledger!.loss).toBeLessThanOrEqual(score.ledger!.lostEventsGroundTruth + score.eventsUnconfirmed);
    // Issue 41: the lossy policy still pages (read from the real Prometheus, pending included).
    expect(pages(score)).not.toEqual([]);
  }, 600_000);

  it('round-robin with an event store per replica: the loss is real and the servers flag it', async () => {
    const score = await fleet('haproxy-rr-local', 40);
    expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(20);
    expect(score.lossySessions).toBeGreaterThan(0);
    // Each replica judges alone: what it stored for sessions whose streams were elsewhere, and never replayed, is
    // stream_moved / no_listener. Per session, the resume verdicts catch fewer when the machine is loaded (few
    // resumes, many cursor-less reconnects: 10% to 60% in CI-size runs); by events the ledger caught 51% to 72%.
    expect(score.ledger!.judged).toBeGreaterThan(0);
    expect(score.ledger!.eventRecall).toBeGreaterThanOrEqual(0.3);
    expect(score.ledger!.judged).toBeLessThanOrEqual(score.ledger!.lostEventsGroundTruth + score.eventsUnconfirmed);
    expect(score.ledger!.shared.unreplayed).toBe(0); // a store per replica is not shared: every process judges alone
    expect(pages(score)).not.toEqual([]);
  }, 600_000);
});
