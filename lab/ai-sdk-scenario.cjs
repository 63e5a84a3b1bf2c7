/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The application side of a fork-lab scenario for the Vercel AI SDK's MCP client (@ai-sdk/mcp): its own HTTP
// transport, no MCP SDK. It reconnects its GET stream only after a stream error, with the last id it saw, so the
// lab's cut is always a real error (the proxy drops the connection in the middle of a frame).
//
// The AI SDK's client reports server notifications only as "Unsupported message type" errors, so the app records
// what its transport delivered by wrapping the transport's onmessage (the client's own field).
const { waitFor } = require('./client-scenario.cjs');

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function runAiSdkScenario({ createMCPClient, telemetry, proxyUrl, scenario }) {
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

  const client = await createMCPClient({
    transport: { type: 'http', url: `${proxyUrl}/mcp` },
    onUncaughtError: error => {
      // On Node 24+ (undici's channels) fail-loud aborts the fetch: undici's `TypeError: terminated` carries the
      // StreamForkDetected as its cause.
      const fork = error?.cause?.name === 'StreamForkDetected' ? error.cause : error;
      if (error?.message !== 'Unsupported message type')
        errors.push({ name: fork?.name, message: String(fork?.message ?? fork) });
    },
  });
  const transport = client.transport;
  const deliver = transport.onmessage;
  transport.onmessage = message => {
    if (message?.method === 'notifications/message') received.push(message.params.data);
    return deliver(message);
  };

  const emit = async count => {
    await client.callTool({ name: 'emit', arguments: { count } });
    emittedByA += count;
  };
  const receivedFromA = () => received.filter(d => d.origin === 'A').length;
  const resumeGets = async target =>
    (await proxyLog()).filter(e => e.kind === 'resume' && (!target || e.target === target));

  await waitFor('the standalone SSE stream', async () =>
    (await proxyLog()).some(e => e.kind === 'get' && e.status === 200),
  );

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
    async 'live-fork'() {
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('routes', { resume: 'B' });
      await control('cut', { midFrame: true });
      await emit(3); // lost
      await waitFor('live events from B', () => received.some(d => d.origin === 'B'), 8000);
      await sleep(500);
    },
    async 'fail-loud'() {
      await emit(3);
      await waitFor('3 events', () => receivedFromA() >= 3);
      await control('routes', { resume: 'B' });
      await control('cut', { midFrame: true });
      await emit(3); // lost
      await waitFor('StreamForkDetected', () => errors.some(e => e.name === 'StreamForkDetected'), 8000);
      await sleep(800); // long enough for B's live events, had they been let through
    },
  };
  const report = { scenario };
  await steps[scenario]();

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
  await client.close().catch(() => {});
  await sleep(100);
  // Awaited: mcp-remote's telemetry is read from its process (mcp-remote-client.cjs).
  report.spans = await telemetry.finishedSpans();
  report.metrics = await telemetry.scrape();
  return report;
}

module.exports = { runAiSdkScenario };
