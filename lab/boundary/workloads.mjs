/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// What the apps do in the boundary lab, and the ground truth they keep: every notification names the session that
// emitted it (server-app.cjs), so a session knows which events it received were another session's or another
// stream's, and which of its own it never received.
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function waitFor(what, predicate, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const control = async (proxy, path, body) =>
  (
    await fetch(`${proxy.url}/__lab/${path}`, { method: body ? 'POST' : 'GET', body: body && JSON.stringify(body) })
  ).json();

/** A real SDK client session through a proxy, recording every notification it receives. */
async function openSession(sdk, proxy, reconnectDelayMs) {
  const { Client, StreamableHTTPClientTransport, LoggingMessageNotificationSchema } = sdk;
  const transport = new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`), {
    reconnectionOptions: {
      initialReconnectionDelay: reconnectDelayMs,
      maxReconnectionDelay: reconnectDelayMs,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    },
  });
  const client = new Client({ name: 'boundary-lab-app', version: '1.0.0' });
  const session = { client, transport, proxy, received: [], errors: [], emitted: 0, id: undefined };
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => session.received.push(n.params.data));
  client.onerror = error => session.errors.push(String(error?.message ?? error));
  await client.connect(transport);
  session.id = transport.sessionId;
  await waitFor('the standalone stream', async () =>
    (await control(proxy, 'log')).log.some(e => e.kind === 'get' && e.status === 200 && e.sessionId === session.id),
  );
  return session;
}

const emit = async (session, count) => {
  await session.client.callTool({ name: 'emit', arguments: { count } });
  session.emitted += count;
};
const own = s => s.received.filter(d => d.session === s.id && d.stream === undefined);

async function closeAll(sessions) {
  for (const s of sessions) await s.transport.close().catch(() => {});
}

export const WORKLOADS = {
  /**
   * Every session listens on its standalone stream; s1's connection drops cleanly, then every session emits while
   * s1 is away, and s1 resumes (on `resumeVia` when set). Truth: the notifications of other sessions s1 received.
   */
  async 'standalone-leak'({ sdk, scenario, proxies }) {
    const sessions = [];
    for (const spec of scenario.sessions) {
      const s = await openSession(sdk, proxies[spec.via], 1000);
      s.spec = spec;
      sessions.push(s);
    }
    const [victim, ...neighbours] = sessions;
    for (const s of sessions) {
      await emit(s, 1);
      await waitFor('a live notification', () => own(s).length >= 1);
    }
    const proxy = proxies[victim.spec.via];
    if (scenario.resumeVia) await control(proxy, 'routes', { resume: scenario.resumeVia });
    await control(proxy, 'cut', { kinds: ['get'], sessionId: victim.id, midFrame: false });
    // While s1 is away (its SDK waits 1 s before it resumes): every neighbour emits, and so does s1.
    for (const s of neighbours) await emit(s, 2);
    await emit(victim, 2);
    await waitFor('the resume', async () =>
      (await control(proxy, 'log')).log.some(e => e.kind === 'resume' && e.sessionId === victim.id && e.status),
    );
    await waitFor('its own events', () => own(victim).length >= victim.emitted, 6000).catch(() => {});
    await sleep(400);
    const foreign = victim.received.filter(d => d.session !== victim.id);
    const truth = {
      foreignKind: 'session',
      foreignReceived: foreign.length,
      lost: victim.emitted - new Set(own(victim).map(d => d.seq)).size,
      victim: victim.id,
      neighbours: neighbours.map(s => s.id),
      neighboursLost: neighbours.reduce((n, s) => n + s.emitted - new Set(own(s).map(d => d.seq)).size, 0),
    };
    await closeAll(sessions);
    return truth;
  },

  /**
   * One session: a tool call's stream on replica A completes; the next tool call runs on B, its stream is cut, and
   * the resume lands on A. Truth: task events of A's earlier call received again (another stream's), and B's task
   * events never received.
   */
  async 'colliding-ids'({ sdk, proxies }) {
    const proxy = proxies.A;
    const s = await openSession(sdk, proxy, 500);
    await s.client.callTool({ name: 'slow_task', arguments: { count: 6, intervalMs: 20 } });
    const fromA = s.received.filter(d => d.origin === 'A' && d.stream === 'task').length;
    await control(proxy, 'routes', { post: 'B', resume: 'A' });
    const call = s.client
      .callTool({ name: 'slow_task', arguments: { count: 10, intervalMs: 150 } }, undefined, { timeout: 5000 })
      .then(
        () => 'completed',
        e => `failed: ${e?.message ?? e}`,
      );
    await waitFor('two task events from B', () => s.received.filter(d => d.origin === 'B').length >= 2);
    await control(proxy, 'cut', { kinds: ['post'], midFrame: false });
    await waitFor('the resume on A', async () =>
      (await control(proxy, 'log')).log.some(e => e.kind === 'resume' && e.target === 'A' && e.status),
    );
    const outcome = await call;
    await sleep(300);
    const receivedFromB = new Set(s.received.filter(d => d.origin === 'B').map(d => d.seq)).size;
    const truth = {
      foreignKind: 'stream',
      foreignReceived: s.received.filter(d => d.origin === 'A' && d.stream === 'task').length - fromA,
      // B's ten task events and its response.
      lost: 10 - receivedFromB + (outcome === 'completed' ? 0 : 1),
      toolCall: outcome,
      errors: s.errors,
    };
    await closeAll([s]);
    return truth;
  },

  /** One session, one replica: a tool call's stream is cut mid-task and resumes where it runs. Nothing is lost. */
  async 'request-stream-resume'({ sdk, proxies }) {
    const proxy = proxies.A;
    const s = await openSession(sdk, proxy, 500);
    await s.client.callTool({ name: 'slow_task', arguments: { count: 3, intervalMs: 20 } });
    const call = s.client
      .callTool({ name: 'slow_task', arguments: { count: 8, intervalMs: 150 } }, undefined, { timeout: 8000 })
      .then(
        () => 'completed',
        e => `failed: ${e?.message ?? e}`,
      );
    await waitFor('two task events', () => s.received.filter(d => d.stream === 'task').length >= 5);
    await control(proxy, 'cut', { kinds: ['post'], midFrame: false });
    const outcome = await call;
    await sleep(200);
    const task = new Set(s.received.filter(d => d.stream === 'task').map(d => d.seq)).size;
    const truth = {
      foreignKind: 'stream',
      foreignReceived: s.received.filter(d => d.stream === 'task').length - task,
      lost: 11 - task + (outcome === 'completed' ? 0 : 1),
      toolCall: outcome,
    };
    await closeAll([s]);
    return truth;
  },
};
