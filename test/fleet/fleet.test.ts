/**
 * The CI-sized fleet run (docs/fleet.md has the full-size numbers): real SDK server replicas behind the fleet's
 * router, client processes with dozens of sessions suffering cuts, slow and duplicate reconnects and a client
 * crash, a real Prometheus scraping them with the shipped rules; scored against the sessions' own event numbering.
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
  falseAlarms: { client: number; server: number; sessions: number };
  recall: { client: number; server: number; either: number };
  ledger: { loss: number; abandoned: number; lostEventsGroundTruth: number; eventRecall: number } | null;
  clientOutcomes: Record<string, number>;
  serverOutcomes: Record<string, number>;
  alerts: { alerts: Record<string, string>; series: Record<string, number> };
}

async function fleet(policy: string, sessions: number): Promise<FleetScore> {
  const score = scoreFleet(await runFleet({ policy, servers: 3, sessions, clients: 2, rounds: 4, prometheus: true }));
  console.log(formatScore(score)); // the numbers, for the CI log
  return score;
}

const raised = (score: FleetScore, alert: string) =>
  Object.keys(score.alerts.alerts).some(a => a.startsWith(`${alert} `));

describe('fleet lab, CI size', () => {
  it('sticky routing with a shared event store: no loss signal on any session that lost nothing, no false page', async () => {
    const score = await fleet('sticky-shared', 40);
    // The run really ran: sessions completed, streams were cut and resumed, forkwatch judged them on both sides.
    expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(20);
    expect(score.resumes).toBeGreaterThanOrEqual(30);
    expect(score.clientOutcomes.resumed).toBeGreaterThanOrEqual(20);
    expect(score.serverOutcomes.replayed).toBeGreaterThanOrEqual(20);
    // The shared store is scoped by session: no replay crosses a session or a stream boundary (#23).
    expect(score.serverOutcomes.cross_session ?? 0).toBe(0);
    expect(score.serverOutcomes.completed_stream ?? 0).toBe(0);
    for (const alert of ['ForkwatchServerCrossSessionReplay', 'ForkwatchServerCompletedStreamResumed']) {
      expect(raised(score, alert), alert).toBe(false);
    }
    expect(score.alerts.series['fleet-server']).toBeGreaterThan(0);
    // Ground truth: the healthy baseline is healthy, nearly always. A stalled machine (a tool call timing out) can
    // still lose a session's events (docs/fleet.md); those sessions are lossy, not false alarms.
    expect(score.lossySessions).toBeLessThanOrEqual(4);
    // No loss signal on any session that lost nothing: the 0-false-alarm requirement.
    expect(score.falseAlarms).toMatchObject({ client: 0, server: 0, sessions: 0 });
    // The server delivery ledger is in the build and calls no loss where none happened, the crashed client's last
    // events included (they stay overdue, then abandoned: a crashed client sends no request after the window).
    expect(score.ledger).not.toBeNull();
    expect(score.ledger!.loss).toBeLessThanOrEqual(score.ledger!.lostEventsGroundTruth);
    for (const alert of ['ForkwatchServerUnknownCursors', 'ForkwatchServerCursorsIgnored']) {
      expect(raised(score, alert), alert).toBe(false);
    }
    // A fork on a session that really lost events is a true page; without any fork the alert stays quiet.
    if (!score.clientOutcomes.forked) expect(raised(score, 'ForkwatchForksDetected')).toBe(false);
  }, 600_000);

  it('rolling restart with a store per replica: the loss is real and the servers alone flag most lossy sessions', async () => {
    const score = await fleet('rolling-restart', 40);
    expect(score.sessions - score.sessionErrors).toBeGreaterThanOrEqual(20);
    expect(score.lossySessions).toBeGreaterThan(0);
    // The servers alone flag at least half of the lossy sessions: their resumes reach a replica whose store does not
    // know the cursor (unknown_cursor). The stopped replica's delivery ledger goes with its process, so the ledger
    // is not what catches this policy (docs/fleet.md).
    expect(score.recall.server).toBeGreaterThanOrEqual(0.5);
    expect(score.recall.either).toBeGreaterThanOrEqual(0.7);
    expect(score.serverOutcomes.unknown_cursor ?? 0).toBeGreaterThan(0);
    // ForkwatchServerUnknownCursors needs more than 5 % of an instance's resumes unknown. How many resumes land on a
    // restarted replica's successor varies from run to run (CI-size runs: 8-13 %, and once 7 of 168, 4 %), so the
    // alert must be raised whenever the whole fleet is clearly past that share (then some instance is too).
    const resumesServed = Object.values(score.serverOutcomes).reduce((a, b) => a + b, 0);
    if ((score.serverOutcomes.unknown_cursor ?? 0) / resumesServed > 0.06) {
      expect(raised(score, 'ForkwatchServerUnknownCursors')).toBe(true);
    }
  }, 600_000);
});
