/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reconnect storms (issue 41), both sides, in the lab: real SDK clients (1.32.2, 2.4) against real SDK servers
 * (1.32.2, 2.x) on 127.0.0.1 (lab/revived/servers.mjs). The storm: the server's store lost the log, so the resume
 * gets the SDK's own 200 with an empty stream; the reconnect after it carries no cursor (typescript-sdk #2499) and
 * every fresh GET stream is closed at once: the client reconnects at its first delay forever, its retry count reset
 * by every graceful close. Beside it, a normal resume and an idle stream a balancer closes after its timeout.
 * The clients reconnect ten times faster than the SDK's defaults (100 ms instead of 1 s), with its 2 retries.
 */
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { startStreamServer } from '../../lab/revived/servers.mjs';
import { EMPTY_STREAM_WINDOW_MS } from '../../src/core/defaults';
import { METRICS } from '../../src/shared/names';
import { sample } from '../support/lab';
import { CLIENTS, FAST_RECONNECT, SERVERS, connect, labScenarios, sleep, until } from './support';

const emptyReconnects = METRICS.clientEmptyReconnects.prometheusName;
const streak = METRICS.clientEmptyReconnectStreak.prometheusName;
const emptyGets = METRICS.serverEmptyRepeatGets.prometheusName;
const t = { transport: 'streamable_http' };

const labs = labScenarios(startStreamServer);
const fw = labs.forkwatch;
const scenario = labs.start;

/** A counter's series, which exists at 0 from the start. */
function present(value: number | undefined): number {
  if (value === undefined) throw new Error('series missing');
  return value;
}

async function counts() {
  const m = await fw().metrics();
  return {
    sent: present(sample(m, emptyReconnects, { ...t, kind: 'resume' })),
    droppedAfterEmpty: present(sample(m, emptyReconnects, { ...t, kind: 'dropped_after_empty' })),
    none: present(sample(m, emptyReconnects, { ...t, kind: 'fresh' })),
    // A histogram has no series before its first recording.
    streaks: sample(m, `${streak}_count`) ?? 0,
    serverEmptyGets: present(sample(m, emptyGets, t)),
  };
}

// The storm is the 2.x server's own answer to an unknown cursor (200, and the stream closed at once). The 1.32.2
// server keeps such a stream open with keep-alives only (a dead stream, judged inconclusive elsewhere): no storm,
// tested below.
const STORM_SERVERS = SERVERS.filter(s => s.label.includes('server 2'));

describe.each(STORM_SERVERS)('$label', server => {
  describe.each(CLIENTS)('$label', client => {
    test('the storm: every empty reconnect counted on the client, the cursor-less one after the empty 200 named, and the repeated GETs on the server', async () => {
      const { lab, session } = await scenario(server, client, { streams: 'storm' });
      await until(() => lab.truth.emptyAnswers >= 15, 'fifteen empty answers');
      await session.client.close();
      await sleep(50);
      const c = await counts();
      // Ground truth: one notification, then nothing but empty answers; the SDK never gave up (maxRetries is 2).
      expect(lab.truth.notifications).toBe(1);
      expect(session.errors.filter(e => /Maximum reconnection/.test(String(e)))).toEqual([]);
      // The first reconnect resumed from the notification's id (a full stream, not counted); the store had lost it:
      // the SDK's own empty 200; the reconnect after it went out without Last-Event-ID, then only fresh GETs.
      expect(c.droppedAfterEmpty).toBe(1);
      expect(c.sent).toBe(0);
      const counted = c.droppedAfterEmpty + c.none;
      // Every empty answer but the last (its reconnect may not have been scheduled yet) is one empty reconnect.
      expect(counted).toBeGreaterThanOrEqual(lab.truth.emptyAnswers - 1);
      expect(counted).toBeLessThanOrEqual(lab.truth.emptyAnswers);
      // The storm never ended: no streak was recorded.
      expect(c.streaks).toBe(0);
      // The server: every GET after an empty answer, within the window, is an empty repeat.
      expect(c.serverEmptyGets).toBeGreaterThanOrEqual(lab.truth.emptyAnswers - 1);
      expect(c.serverEmptyGets).toBeLessThanOrEqual(lab.truth.emptyAnswers);
    });

    test('a storm that ends: the run of empty reconnects recorded once, as long as it was, when a stream delivers again', async () => {
      const stormLength = 5;
      const { lab } = await scenario(server, client, { streams: 'storm-ends', stormLength });
      await until(() => lab.truth.notifications >= 2, 'the notification after the storm');
      await sleep(100);
      const c = await counts();
      const m = await fw().metrics();
      // Ground truth: the resume and the fresh GETs after it answered empty, then a held stream that delivered.
      expect(lab.truth.emptyAnswers).toBe(stormLength);
      expect(c.droppedAfterEmpty + c.none).toBe(stormLength);
      // One run, recorded when the stream delivered, of every empty reconnect in it.
      expect(c.streaks).toBe(1);
      expect(sample(m, `${streak}_sum`)).toBe(stormLength);
      expect(sample(m, `${streak}_bucket`, { le: '+Inf' })).toBe(1);
    });
  });
});

// The 1.32.2 server keeps a stream it cannot replay open with keep-alives: the storm's store gives no empty answer
// to close, so no empty reconnect, no run and no empty GET is counted on either side.
describe.each(SERVERS.filter(server => !STORM_SERVERS.includes(server)))('$label', server => {
  describe.each(CLIENTS)('$label', client => {
    test('the storm scenario on a server that holds the stream open: nothing empty counted, no streak', async () => {
      const { lab, session } = await scenario(server, client, { streams: 'storm' });
      await until(() => lab.truth.resumes >= 1, 'the resume after the cut');
      await sleep(EMPTY_STREAM_WINDOW_MS / 4);
      await session.client.close();
      await sleep(50);
      const c = await counts();
      expect(lab.truth.notifications).toBe(1);
      expect(c).toEqual({ sent: 0, droppedAfterEmpty: 0, none: 0, streaks: 0, serverEmptyGets: 0 });
    });
  });
});

describe.each(SERVERS)('$label', server => {
  describe.each(CLIENTS)('$label', client => {
    test('the healthy control: a stream cut once and resumed with its log, nothing empty on either side', async () => {
      const { lab } = await scenario(server, client, { streams: 'healthy' });
      await until(() => lab.truth.resumes >= 1 && lab.truth.notifications >= 2, 'the resume and a live notification');
      await sleep(300);
      const c = await counts();
      expect(lab.truth.cut).toBe(1);
      expect(c).toEqual({ sent: 0, droppedAfterEmpty: 0, none: 0, streaks: 0, serverEmptyGets: 0 });
    });

    test('short sessions the client ends (DELETE, then close): the standalone stream ends empty, no reconnect goes out, nothing counted', async () => {
      const { lab, session } = await scenario(server, client, { streams: 'quiet' });
      const sessions = [session, await connect(client, lab.url), await connect(client, lab.url)];
      await until(() => lab.truth.gets >= sessions.length, 'every standalone GET answered');
      for (const s of sessions) {
        await s.transport.terminateSession();
        await s.client.close();
      }
      // Longer than the client's first reconnection delay: a reconnect the SDK had scheduled would have gone out.
      await sleep(3 * FAST_RECONNECT.initialReconnectionDelay);
      const c = await counts();
      // Ground truth: each session's standalone GET, answered and then closed by the DELETE; none sent again.
      expect(lab.truth.gets).toBe(sessions.length);
      expect(lab.truth.notifications).toBe(0);
      expect(c).toEqual({ sent: 0, droppedAfterEmpty: 0, none: 0, streaks: 0, serverEmptyGets: 0 });
    });

    test('an idle stream closed after a quiet period longer than the window: reconnects with nothing new, not a storm', async () => {
      const idleMs = EMPTY_STREAM_WINDOW_MS + 500;
      const { lab } = await scenario(server, client, { streams: 'idle', idleMs });
      await until(() => lab.truth.cut >= 2 && lab.truth.gets >= 3, 'two idle closes and their reconnects', 3 * idleMs);
      const c = await counts();
      expect(lab.truth.notifications).toBe(1);
      expect(c).toEqual({ sent: 0, droppedAfterEmpty: 0, none: 0, streaks: 0, serverEmptyGets: 0 });
    }, 30_000); // Two idle periods of the real window (5.5 s each) on a shared machine.
  });
});
