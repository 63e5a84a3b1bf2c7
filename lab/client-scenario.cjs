/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The application side of a fork-lab scenario: a real MCP client (passed in, so the CommonJS and the ESM entry
// can each bring their own build of the SDK) talks to the servers through the lab proxy, the proxy drops its
// SSE stream, and the app records what it received. Returns a JSON-able report.

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function waitFor(what, predicate, timeoutMs = 8000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

async function runScenario({
  sdk,
  telemetry,
  proxyUrl,
  scenario,
  verdictTimeoutMs,
  resumeTo,
  keepTalkingAfterMs,
  listens = true,
  connectApp,
}) {
  const control = async (path, body) => {
    const res = await fetch(`${proxyUrl}/__lab/${path}`, {
      method: body ? 'POST' : 'GET',
      body: body && JSON.stringify(body),
    });
    return res.json();
  };
  const proxyLog = async () => (await control('log')).log;
  const received = [];
  const errors = [];
  let emittedByA = 0;

  const onLog = data => received.push(data);
  const onError = error => errors.push({ name: error?.name, message: String(error?.message ?? error) });
  // A stack (lab/stacks/client-stacks.mjs) builds the client its own way and hands back the MCP SDK Client it made.
  const { client, close } = await (connectApp ?? connectSdkClient)({ sdk, url: `${proxyUrl}/mcp`, onLog, onError });

  const emit = async count => {
    await client.callTool({ name: 'emit', arguments: { count } });
    emittedByA += count;
  };
  const receivedFromA = () => received.filter(d => d.origin === 'A').length;
  const resumeGets = async target =>
    (await proxyLog()).filter(e => e.kind === 'resume' && (!target || e.target === target));

  if (listens) {
    await waitFor('the standalone SSE stream', async () =>
      (await proxyLog()).some(e => e.kind === 'get' && e.status === 200),
    );
  } else {
    // The SDK takes a 405 as "this server offers no GET stream" and never retries it.
    await waitFor('the refused GET', async () => (await proxyLog()).some(e => e.kind === 'get' && e.status === 405));
  }

  const steps = {
    async healthy() {
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('cut', { midFrame: true });
      await emit(3); // sent while the client is away: must be replayed
      await waitFor('the resume', async () => (await resumeGets()).some(e => e.status === 200));
      await emit(2);
      await waitFor('all 8 events', () => receivedFromA() >= 8);
    },
    async 'silent-fork'() {
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('routes', { resume: 'B', get: 'B' });
      await control('cut', { midFrame: true });
      await emit(3); // lost: B has no log for the session
      await waitFor('the resume on B', async () => (await resumeGets('B')).some(e => e.status === 200));
      await sleep(verdictTimeoutMs + 300);
      await control('cut', { midFrame: false, kinds: ['resume'] });
      // The SDK reconnects without Last-Event-ID (SDK issue #2499).
      await waitFor(
        'the cursor-less reconnect',
        async () => (await proxyLog()).filter(e => e.kind === 'get').length >= 2,
      );
      await sleep(200);
    },
    async 'frameless-resume-cut'() {
      await emit(5);
      await waitFor('5 events', () => receivedFromA() >= 5);
      await control('routes', { resume: 'B', get: 'A' });
      await control('cut', { midFrame: false });
      // A must have seen the drop before it stores the 7: on a loaded machine it may still write them to the dead
      // connection, and then, rightly, count the writes just before the drop as in flight (one more than were lost).
      await waitFor(
        'A to see the stream drop',
        async () => (await control('upstream/A/standalone-streams')).open === 0,
      );
      await emit(7); // lost: stored on A while the client resumes on B, and no cursor comes back for them
      await waitFor('the resume on B', async () => (await resumeGets('B')).some(e => e.status === 200));
      await sleep(500);
      await control('cut', { midFrame: false, kinds: ['resume'] });
      // The SDK reconnects without Last-Event-ID (typescript-sdk #2499), to A.
      await waitFor(
        'the cursor-less reconnect to A',
        async () =>
          (await proxyLog()).filter(e => e.kind === 'get' && e.target === 'A' && e.status === 200).length >= 2,
      ).catch(async e => {
        throw new Error(e.message + JSON.stringify(await proxyLog()));
      });
      await sleep(200);
      await emit(2); // live on the new stream
      await waitFor('the live events', () => receivedFromA() >= 7);
      await sleep(600);
    },
    async 'live-fork'() {
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('routes', { resume: 'B' });
      await control('cut', { midFrame: true });
      await emit(3); // lost
      await waitFor('live events from B', () => received.some(d => d.origin === 'B'), 6000);
      await sleep(500);
    },
    async 'fail-loud'() {
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('routes', { resume: 'B' });
      await control('cut', { midFrame: true });
      await emit(3); // lost
      await waitFor('StreamForkDetected', () => errors.some(e => e.name === 'StreamForkDetected'), 6000);
      await sleep(800); // long enough for B's live events, had they been let through
    },
    async 'fork-then-return'() {
      await steps['live-fork']();
      // A second reconnect, back to A: A replays its log after B's cursor, which the app had partly seen.
      await control('routes', { resume: 'A' });
      await control('cut', { midFrame: false });
      await waitFor('the resume on A', async () => (await resumeGets('A')).some(e => e.status === 200));
      await sleep(600);
    },
    async 'post-stream-fork'() {
      const call = client
        .callTool({ name: 'slow_task', arguments: { count: 8, intervalMs: 150 } }, undefined, { timeout: 4000 })
        .then(
          () => 'completed',
          e => `failed: ${e?.message ?? e}`,
        );
      await waitFor('2 task events', () => received.filter(d => d.stream === 'task').length >= 2);
      await control('routes', { resume: 'B' });
      await control('cut', { midFrame: true, kinds: ['post'] });
      await waitFor('the resume on B', async () => (await resumeGets('B')).length > 0);
      await sleep(800);
      emittedByA += 8;
      report.toolCall = await call;
    },
    async 'fork-clean-cut'() {
      // The connection to A drops cleanly (no frame in flight), the client resumes on B, and only then does A get
      // events for the session: A stores them for a stream with no connection there, and they never arrive.
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('routes', { resume: 'B' });
      await control('cut', { midFrame: false });
      await waitFor('the resume on B', async () => (await resumeGets('B')).length > 0);
      await sleep(200);
      await emit(3); // lost
      await sleep(300);
    },
    async 'split-brain'() {
      // Round-robin with no resume: every other tool call lands on B, whose notifications go to a standalone stream
      // that nobody listens to on B.
      await control('routes', { post: ['B', 'A'] });
      for (let i = 0; i < 4; i++) await client.callTool({ name: 'emit', arguments: { count: 2 } });
      await sleep(300);
      report.emittedTotal = 8;
      report.receivedTotal = received.length;
    },
    async 'no-get-stream'() {
      // Notifications not tied to a request go to the standalone stream, which this client never opened.
      await emit(3);
      await sleep(300);
    },
    async rejected() {
      await emit(2);
      await waitFor('2 events', () => receivedFromA() >= 2);
      await control('routes', { resume: resumeTo });
      await control('cut', { midFrame: false, keepUpstream: true });
      await waitFor('the rejected resumes', async () => (await resumeGets()).filter(e => e.status >= 400).length >= 2);
      await sleep(200);
    },
  };
  const report = { scenario };
  await steps[scenario]();
  if (keepTalkingAfterMs > 0) {
    // A live client goes on talking: requests now, and again after the servers' delivery window (two each time, so
    // round-robin routing reaches both servers). Overdue events count only on such a request after the window.
    const ping = () => client.ping().catch(e => errors.push({ name: 'ping', message: String(e?.message ?? e) }));
    for (const wait of [0, keepTalkingAfterMs]) {
      await sleep(wait);
      for (let i = 0; i < 2; i++) await ping();
    }
  }

  const seen = new Map();
  for (const d of received) if (d.origin === 'A') seen.set(d.seq, (seen.get(d.seq) ?? 0) + 1);
  const lost = [];
  for (let seq = 1; seq <= emittedByA; seq++) if (!seen.has(seq)) lost.push(seq);
  Object.assign(report, {
    emittedByA,
    received,
    lost,
    duplicatesSeenByApp: [...seen.values()].filter(n => n > 1).length,
    errors,
    httpLog: (await proxyLog()).map(({ method, kind, target, status, lastEventId }) => ({
      method,
      kind,
      target,
      status,
      lastEventId,
    })),
  });
  await close().catch(() => {});
  await sleep(100);
  report.spans = telemetry.finishedSpans();
  report.metrics = await telemetry.scrape();
  return report;
}

/** The lab's own app: the SDK's Client on its StreamableHTTPClientTransport, reconnecting after 300 ms. */
async function connectSdkClient({ sdk, url, onLog, onError }) {
  const { Client, StreamableHTTPClientTransport, LoggingMessageNotificationSchema } = sdk;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    reconnectionOptions: {
      initialReconnectionDelay: 300,
      maxReconnectionDelay: 600,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    },
  });
  const client = new Client({ name: 'fork-lab-app', version: '1.0.0' });
  const onLogNotification = n => onLog(n.params.data);
  // 1.x takes the notification's schema, 2.x its method name.
  if (LoggingMessageNotificationSchema)
    client.setNotificationHandler(LoggingMessageNotificationSchema, onLogNotification);
  else client.setNotificationHandler('notifications/message', onLogNotification);
  client.onerror = onError;
  await client.connect(transport);
  return { client, close: () => transport.close() };
}

module.exports = { runScenario, waitFor };
