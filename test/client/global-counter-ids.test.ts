/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Skipped events on resume, against a real SDK server (1.32.2, Node HTTP) and the real SDK client on 127.0.0.1:
 * integer event ids are counted as gaps only once the session's live stream was seen to advance by one. A server
 * that numbers every event with one global counter (mcp-persist's Redis INCR) writes integers that jump by the
 * other sessions' events: its lossless resumes skip nothing. A per-session counter that loses events on a resume
 * still has its skipped events counted.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import * as streamableHttpClient from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test } from 'vitest';
import { FORK_REASONS } from '../../src/core/verdict';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sample } from '../support/lab';

interface StoredEvent {
  id: string;
  seq: number;
  session: string;
  streamId: string;
  message: unknown;
}

/**
 * Events of every session in one log, numbered by one counter (`global`, as Redis INCR over the whole store), by a
 * counter per session (`per-session`), or by a counter per stream with ids `<stream>:<hex>` (`per-stream-hex`).
 * `loseOnReplay` events right after the cursor are left out of the next replay: a real loss the client cannot
 * recover.
 */
class CountingStore {
  private readonly events: StoredEvent[] = [];
  private readonly counters = new Map<string, number>();
  loseOnReplay = 0;

  constructor(private readonly numbering: 'global' | 'per-session' | 'per-stream-hex') {}

  /** The next number of the counter `streamId` of `session` uses, taken as an event stored there would take it. */
  private next(session: string, streamId: string): StoredEvent {
    const key =
      this.numbering === 'global' ? '' : this.numbering === 'per-session' ? session : `${session} ${streamId}`;
    const seq = (this.counters.get(key) ?? 0) + 1;
    this.counters.set(key, seq);
    const id = this.numbering === 'per-stream-hex' ? `${streamId}:${seq.toString(16).padStart(16, '0')}` : String(seq);
    return { id, seq, session, streamId, message: undefined };
  }

  /**
   * Another process of the fleet stores an event of `streamId` in the shared log (it takes the stream's next number)
   * and writes it to a connection the client no longer reads: a split brain. This process never delivers it.
   */
  storedElsewhere(session: string, streamId: string): void {
    this.next(session, streamId);
  }

  forSession(session: string) {
    return {
      storeEvent: async (streamId: string, message: unknown) => {
        const event = { ...this.next(session, streamId), message };
        this.events.push(event);
        return event.id;
      },
      getStreamIdForEventId: async (id: string) => this.find(session, id)?.streamId,
      replayEventsAfter: async (
        cursor: string,
        { send }: { send: (id: string, message: unknown) => Promise<void> },
      ): Promise<string> => {
        const from = this.find(session, cursor);
        if (!from) return '';
        let lose = this.loseOnReplay;
        this.loseOnReplay = 0;
        for (const e of this.events) {
          if (e.session !== session || e.streamId !== from.streamId || e.seq <= from.seq) continue;
          if (lose-- > 0) continue;
          await send(e.id, e.message as never);
        }
        return from.streamId;
      },
    };
  }

  private find(session: string, id: string) {
    return this.events.find(e => e.session === session && e.id === id);
  }
}

interface ServerSession {
  mcp: McpServer;
  /** The standalone GET stream's response while it is open. */
  get: ServerResponse | undefined;
}

/** One McpServer and transport per session, every session's events in `store`. */
async function startServer(store: CountingStore) {
  const sessions = new Map<string, ServerSession>();
  const http: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const id = req.headers['mcp-session-id'];
    let entry = typeof id === 'string' ? sessions.get(id) : undefined;
    let transport = (entry as (ServerSession & { transport?: StreamableHTTPServerTransport }) | undefined)?.transport;
    if (!transport) {
      const session = randomUUID();
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => session,
        eventStore: store.forSession(session),
      });
      const mcp = new McpServer({ name: 'global-counter', version: '1.0.0' }, { capabilities: { logging: {} } });
      await mcp.connect(transport);
      entry = { mcp, get: undefined };
      sessions.set(session, Object.assign(entry, { transport }));
    }
    if (req.method === 'GET') entry!.get = res;
    await transport.handleRequest(req, res);
  });
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    sessions,
    /** A notification on the session's standalone stream (stored first, then written if the stream is open). */
    notify: (session: string, n: number) =>
      sessions
        .get(session)!
        .mcp.server.notification({ method: 'notifications/message', params: { level: 'info', data: { n } } }),
    /** The connection of the session's GET stream dies, as a proxy's idle cut does. */
    cut: (session: string) => {
      const entry = sessions.get(session)!;
      entry.get?.socket?.destroy();
      entry.get = undefined;
    },
    close: () =>
      new Promise<void>(resolve => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));
async function waitFor(what: string, ok: () => boolean, ms = 8000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

let fw: Forkwatch | undefined;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  await fw?.teardown();
  fw = undefined;
});

async function connect(url: string, server: { sessions: Map<string, ServerSession> }) {
  const transport = new streamableHttpClient.StreamableHTTPClientTransport(new URL(url), {
    reconnectionOptions: {
      initialReconnectionDelay: 200,
      maxReconnectionDelay: 200,
      reconnectionDelayGrowFactor: 1,
      maxRetries: 2,
    },
  });
  const client = new Client({ name: 'global-counter-test', version: '1.0.0' });
  const received: number[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => {
    received.push((n.params.data as { n: number }).n);
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  const session = transport.sessionId!;
  await waitFor('the standalone GET stream', () => server.sessions.get(session)?.get !== undefined);
  return { session, received };
}

/** forkwatch on the client, a server on `store` numbered as given, and one session connected to it. */
async function oneSession(numbering: 'global' | 'per-session' | 'per-stream-hex') {
  const forkwatch = setupForkwatch({ verdictTimeoutMs: 3000 }, [streamableHttpClient]);
  fw = forkwatch;
  const store = new CountingStore(numbering);
  const server = await startServer(store);
  cleanups.push(server.close);
  const a = await connect(server.url, server);
  /** Notifications `from`..`to` on the session's standalone stream, until the client has `to` of them in all. */
  const notifyUpTo = async (from: number, to: number, what: string) => {
    for (let n = from; n <= to; n++) await server.notify(a.session, n);
    await waitFor(what, () => a.received.length === to);
  };
  return { forkwatch, store, server, a, notifyUpTo };
}

const resumes = METRICS.clientResumes.prometheusName;
const skipped = METRICS.clientResumeSkippedEvents.prometheusName;
const liveGaps = METRICS.clientLiveGaps.prometheusName;
const forks = METRICS.clientForks.prometheusName;
const t = { transport: 'streamable_http' };

describe('integer ids: density learned from the live stream, not assumed', () => {
  test('one global counter, two sessions interleaving: lossless resumes skip no events', async () => {
    fw = setupForkwatch({ verdictTimeoutMs: 3000 }, [streamableHttpClient]);
    const store = new CountingStore('global');
    const server = await startServer(store);
    cleanups.push(server.close);
    const a = await connect(server.url, server);
    const b = await connect(server.url, server);
    // Interleaved: each session's stream sees every other id of the one counter.
    for (let n = 1; n <= 4; n++) {
      await server.notify(a.session, n);
      await server.notify(b.session, n);
    }
    await waitFor('the live events', () => a.received.length === 4 && b.received.length === 4);
    server.cut(a.session);
    server.cut(b.session);
    // Stored while both streams are down (the reconnect waits 200 ms): the replays deliver them.
    for (let n = 5; n <= 6; n++) {
      await server.notify(a.session, n);
      await server.notify(b.session, n);
    }
    await waitFor('the replays', () => a.received.length === 6 && b.received.length === 6);
    await fw.waitForSpans('forkwatch.client.resume', 2);
    const text = await fw.metrics();
    // Nothing lost: both resumes proved continuity by order, and no gap was claimed.
    expect(a.received).toEqual([1, 2, 3, 4, 5, 6]);
    expect(b.received).toEqual([1, 2, 3, 4, 5, 6]);
    expect(sample(text, resumes, { ...t, outcome: 'resumed' })).toBe(2);
    // Nothing recorded at all (a histogram without a recording has no series): no gap, and no false 0 either.
    expect(sample(text, `${skipped}_sum`) ?? 0).toBe(0);
    // The live streams stepped by two from the start: never seen dense, and integers name no stream.
    expect(sample(text, liveGaps, t)).toBe(0);
    expect(sample(text, `${skipped}_count`) ?? 0).toBe(0);
    for (const span of fw.spans('forkwatch.client.resume')) {
      const first = span.events.find(e => e.name === 'forkwatch.resume.first_frame')!.attributes!;
      expect(first['forkwatch.resume.skipped_events']).toBeUndefined();
      expect(first['forkwatch.continuity.verified']).toBe(true);
    }
  }, 30_000);

  test('a per-session counter whose replay loses two events: the two are counted', async () => {
    const { forkwatch, store, server, a, notifyUpTo } = await oneSession('per-session');
    await notifyUpTo(1, 3, 'the live events');
    server.cut(a.session);
    store.loseOnReplay = 2;
    for (let n = 4; n <= 6; n++) await server.notify(a.session, n);
    await waitFor('the replay', () => a.received.length === 4);
    await forkwatch.waitForSpans('forkwatch.client.resume', 1);
    const text = await forkwatch.metrics();
    expect(a.received).toEqual([1, 2, 3, 6]);
    expect(sample(text, resumes, { ...t, outcome: 'resumed' })).toBe(1);
    expect(sample(text, `${skipped}_sum`)).toBe(2);
    expect(sample(text, `${skipped}_count`)).toBe(1);
  }, 30_000);
});

describe('live gaps: ids skipped on a live stream seen dense (exposure)', () => {
  test('per-stream counters: an id another process took after steps of one counts one live gap, and pages nothing', async () => {
    const { forkwatch, store, a, notifyUpTo } = await oneSession('per-stream-hex');
    await notifyUpTo(1, 3, 'the live events');
    expect(sample(await forkwatch.metrics(), liveGaps, t)).toBe(0);
    // A split brain: the next id of the standalone stream went to a process the stream no longer reads.
    store.storedElsewhere(a.session, '_GET_stream');
    await notifyUpTo(4, 5, 'the events after the gap');
    // A second gap in the same session: its numbering is sparse from the first, so it is not counted again.
    store.storedElsewhere(a.session, '_GET_stream');
    await notifyUpTo(6, 6, 'the event after the second gap');
    const text = await forkwatch.metrics();
    expect(sample(text, liveGaps, t)).toBe(1);
    for (const reason of FORK_REASONS) expect(sample(text, forks, { ...t, reason })).toBe(0);
    expect(sample(text, resumes, { ...t, outcome: 'forked' })).toBe(0);
  }, 30_000);

  test('per-stream counters, a drop and a replay that loses nothing: no live gap', async () => {
    const { forkwatch, server, a, notifyUpTo } = await oneSession('per-stream-hex');
    await notifyUpTo(1, 3, 'the live events');
    server.cut(a.session);
    for (let n = 4; n <= 6; n++) await server.notify(a.session, n);
    await waitFor('the replay', () => a.received.length === 6);
    await notifyUpTo(7, 8, 'the live events after it');
    await forkwatch.waitForSpans('forkwatch.client.resume', 1);
    const text = await forkwatch.metrics();
    expect(a.received).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(sample(text, resumes, { ...t, outcome: 'resumed' })).toBe(1);
    expect(sample(text, liveGaps, t)).toBe(0);
  }, 30_000);

  test("integer ids of one counter per session jump by the session's other streams: no live gap", async () => {
    const { forkwatch, store, a, notifyUpTo } = await oneSession('per-session');
    await notifyUpTo(1, 3, 'the live events');
    // A request stream of the session takes the next number (its response): the standalone stream jumps by one.
    store.storedElsewhere(a.session, 'a-request-stream');
    await notifyUpTo(4, 5, 'the events after the jump');
    expect(sample(await forkwatch.metrics(), liveGaps, t)).toBe(0);
  }, 30_000);
});
