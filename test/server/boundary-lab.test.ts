/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The boundary lab (lab/boundary/) on the real SDK: each crossing scenario raises its signal from the servers alone
 * (the clients carry no forkwatch), and every healthy control stays silent on it. The ground truth is the apps':
 * notifications carry the session that emitted them.
 */
import { existsSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import * as boundary from '../../lab/boundary/run.mjs';
// @ts-expect-error: plain ESM module without types
import { REDIS_SERVER } from '../../lab/boundary/redis.mjs';
import { ATTR, METRICS, SERVER_BOUNDARY_OUTCOMES } from '../../src/shared/names';
import { hashSessionId } from '../../src/shared/session-id';

interface BoundaryTruth {
  foreignReceived: number;
  lost: number;
  victim?: string;
  neighbours?: string[];
  neighboursLost?: number;
}
interface BoundarySpan {
  name: string;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
}
interface BoundaryResult {
  truth: BoundaryTruth;
  servers: Record<string, { metrics: string; spans: BoundarySpan[] }>;
  signals: Record<string, number>;
  verdict: string;
}
const run = boundary.runBoundaryScenario as (name: string, options?: object) => Promise<BoundaryResult>;
const scenarios = boundary.BOUNDARY_SCENARIOS as Record<
  string,
  { crosses?: string; knownMiss?: boolean; redis?: boolean }
>;

const crossing = Object.entries(scenarios).filter(([, s]) => s.crosses && !s.knownMiss);
const healthy = Object.entries(scenarios).filter(([, s]) => !s.crosses);
const resumes = METRICS.serverResumes.prometheusName;

/** The server resume spans of a boundary outcome, over every replica. */
const spansOf = (r: BoundaryResult, outcome: string) =>
  Object.values(r.servers).flatMap(s =>
    s.spans.filter(span => span.name === 'forkwatch.server.resume' && span.attributes[ATTR.serverOutcome] === outcome),
  );

test('Debian redis-server is installed (scripts/provision.mjs)', () => {
  expect(existsSync(REDIS_SERVER), `${REDIS_SERVER} missing: apt-get install redis-server`).toBe(true);
});

describe('boundary lab, SDK 1.32.2 servers', () => {
  test.each(crossing)('%s: the crossing happened, and the servers alone say so', async (name, scenario) => {
    const r = await run(name);
    expect(r.truth.foreignReceived, 'ground truth: events of another session or stream received').toBeGreaterThan(0);
    expect(r.signals[scenario.crosses!]).toBeGreaterThanOrEqual(1);
    expect(r.verdict).toBe('caught');
    const [span] = spansOf(r, scenario.crosses!);
    expect(span).toBeDefined();
    if (scenario.crosses === 'cross_session') {
      // Both sessions, hashed: the victim's, and the one whose events it was sent; never a raw id by default.
      expect(span!.attributes[ATTR.sessionHash]).toBe(hashSessionId(r.truth.victim!));
      const other = span!.attributes[ATTR.foreignSessionHash];
      expect(r.truth.neighbours!.map(hashSessionId)).toContain(other);
      expect(span!.attributes[ATTR.foreignEvents]).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(span)).not.toContain(r.truth.victim!);
      for (const id of r.truth.neighbours!) expect(JSON.stringify(span)).not.toContain(id);
      // A leak, not a loss: the victim and its neighbours lost nothing.
      expect(r.truth.lost + r.truth.neighboursLost!).toBe(0);
    } else {
      expect(r.truth.lost, 'ground truth: the events of the stream the client waited on').toBeGreaterThan(0);
    }
  });

  test.each(healthy)('%s: healthy control, nothing crossed and the servers stay silent', async name => {
    const r = await run(name);
    expect(r.truth.foreignReceived).toBe(0);
    expect(r.truth.lost).toBe(0);
    for (const outcome of SERVER_BOUNDARY_OUTCOMES) expect(r.signals[outcome], outcome).toBe(0);
    // The replays did happen, and were counted as what they are.
    const replayed = Object.values(r.servers).reduce(
      (n, s) => n + boundary.sumMetric(s.metrics, resumes, { outcome: 'replayed' }),
      0,
    );
    expect(replayed).toBeGreaterThanOrEqual(1);
    expect(r.verdict).toBe('silent');
  });

  test('the documented miss: a leak of events stored before a second session used the store there', async () => {
    const r = await run('cross-session-lone-replica');
    expect(r.truth.foreignReceived).toBeGreaterThan(0);
    expect(r.signals.cross_session).toBe(0);
    // What the replaying replica can say: the store is used by several of its sessions.
    const [span] = Object.values(r.servers)
      .flatMap(s => s.spans)
      .filter(s => s.name === 'forkwatch.server.resume');
    const done = span!.events.find(e => e.name === 'forkwatch.replay.done')!;
    expect(done.attributes[ATTR.storeShared]).toBe(true);
  });

  test('captureRawSessionId: the raw ids of both sessions join the hashes', async () => {
    const r = await run('cross-session-one-process', { serverInstrumentation: { captureRawSessionId: true } });
    const [span] = spansOf(r, 'cross_session');
    expect(span!.attributes[ATTR.mcpSessionId]).toBe(r.truth.victim);
    expect(span!.attributes[ATTR.foreignSessionId]).toBe(r.truth.neighbours![0]);
  });
});

describe('boundary lab, @modelcontextprotocol/server 2.x servers', () => {
  const v2 = [
    'cross-session-one-process',
    'colliding-ids',
    'per-session-keys-one-process',
    'request-stream-resume-here',
  ];
  test.each(v2)('%s', async name => {
    const r = await run(name, { serverSdk: 'v2' });
    const crosses = scenarios[name]!.crosses;
    if (crosses) {
      expect(r.truth.foreignReceived).toBeGreaterThan(0);
      expect(r.signals[crosses]).toBeGreaterThanOrEqual(1);
    } else {
      expect(r.truth.foreignReceived + r.truth.lost).toBe(0);
      for (const outcome of SERVER_BOUNDARY_OUTCOMES) expect(r.signals[outcome], outcome).toBe(0);
    }
  });
});
