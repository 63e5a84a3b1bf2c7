/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// An MCP `EventStore` on Redis for @modelcontextprotocol/sdk (1.x) and @modelcontextprotocol/server (2.x), shared by
// every replica of a server. One store object per session (the SDK gives a transport one store), so:
//
// - Per-session keys. The SDK stores every session's standalone events under the stream id `_GET_stream`
//   (typescript-sdk #1004); a store keyed by stream id alone would replay session B's notifications into session
//   A's resume. Every key here carries the session id, in a hash tag (`{session}`) so a Redis Cluster keeps a
//   session's keys in one slot.
// - Event ids are a per-session counter (INCR): unique in the session, ordered, and the same on every replica, so
//   a resume on any replica finds its cursor.
// - `getStreamIdForEventId` is implemented: with it the SDK answers 409 to a second resume of a stream that still has
//   a connection, and 400 to a cursor this session never issued, instead of a 200 with an empty stream (a silent
//   fork, what the SDK's own example store does).
// - `replayEventsAfter` throws for an unknown cursor (the SDK answers 500), never a stream that replays nothing.
// - Bounded: every key expires `ttlMs` after the session's last event; each stream keeps its last `maxEvents`.
//
// Needs the `redis` npm package (node-redis 5 or later); pass a connected client: `createClient({ url })`.
//
// Keys, for session S: fw:{S}:seq (the id counter), fw:{S}:streams (hash: event id -> stream id), fw:{S}:s:<stream>
// (a Redis stream of that stream's events, entry id `<event id>-0`, field `m` = the JSON message).

const STORE = `
local n = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], n, ARGV[1])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], n .. '-0', 'm', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return n
`;

class UnknownCursorError extends Error {
  constructor(eventId) {
    super(`event id ${JSON.stringify(eventId)} is not in this session's log`);
    this.name = 'UnknownCursorError';
  }
}

class RedisEventStore {
  /**
   * @param {import('redis').RedisClientType} redis a connected node-redis client (shared by every session)
   * @param {{ sessionId: string, ttlMs?: number, maxEvents?: number }} options
   */
  constructor(redis, { sessionId, ttlMs = 60 * 60_000, maxEvents = 10_000 }) {
    if (!sessionId) throw new Error('RedisEventStore needs the session id: one store per session');
    this.redis = redis;
    this.ttlMs = ttlMs;
    this.maxEvents = maxEvents;
    this.prefix = `fw:{${sessionId}}`;
  }

  streamKey(streamId) {
    return `${this.prefix}:s:${streamId}`;
  }

  async storeEvent(streamId, message) {
    const n = await this.redis.eval(STORE, {
      keys: [`${this.prefix}:seq`, `${this.prefix}:streams`, this.streamKey(streamId)],
      arguments: [streamId, JSON.stringify(message), String(this.ttlMs), String(this.maxEvents)],
    });
    return String(n);
  }

  /** The stream an event id belongs to, or undefined: the SDK then refuses the resume (400). */
  async getStreamIdForEventId(eventId) {
    if (!/^[1-9][0-9]*$/.test(String(eventId))) return undefined;
    return (await this.redis.hGet(`${this.prefix}:streams`, String(eventId))) ?? undefined;
  }

  /** Sends the cursor's stream's events after it, in order, and returns that stream's id. */
  async replayEventsAfter(lastEventId, { send }) {
    const streamId = await this.getStreamIdForEventId(lastEventId);
    if (streamId === undefined) throw new UnknownCursorError(lastEventId);
    const entries = await this.redis.xRange(this.streamKey(streamId), `(${lastEventId}-0`, '+');
    for (const { id, message } of entries) await send(id.slice(0, id.indexOf('-')), JSON.parse(message.m));
    return streamId;
  }

  /** Deletes the session's log (the session was deleted). */
  async forget() {
    const streams = await this.redis.hVals(`${this.prefix}:streams`);
    const keys = [`${this.prefix}:seq`, `${this.prefix}:streams`, ...new Set(streams.map(s => this.streamKey(s)))];
    await this.redis.del(keys);
  }
}

module.exports = { RedisEventStore, UnknownCursorError };
