/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Event stores shared by every session of a server process (memory) or of the whole fleet (Redis), in three key
// policies. All resolve cursors correctly (no `_GET_stream` split bug) and use the SDK's id format
// `<streamId>_<ms>_<rand>`:
//
//   keys 'sdk'            the stream id the SDK passes is the key: every session's standalone stream is `_GET_stream`
//                         (typescript-sdk #1004), so a resume replays other sessions' standalone events (the leak)
//   keys 'per-session'    the key is `<session>/<streamId>`: healthy control
//   keys 'refuse-foreign' per-session keys, and getStreamIdForEventId refuses a cursor stored for another session
//                         (the SDK answers 400): healthy control, the store a production deployment should have
//   keys 'deploy'         the reference deployment's RedisEventStore (deploy/redis-event-store.cjs, node-redis):
//                         per-session keys and per-session integer ids shared by every replica (Redis only)
//
// createSharedStoreFactory(config) returns (sessionId) => EventStore: one view per session over one log.
import { createRequire } from 'node:module';
import { connectRedis } from './redis.mjs';

const require = createRequire(import.meta.url);

/** One node-redis client per process, one RedisEventStore per session, as deploy/server.cjs has it. */
function deployStoreFactory(redisPort) {
  const { RedisEventStore } = require('../../deploy/redis-event-store.cjs');
  const client = require('redis').createClient({ url: `redis://127.0.0.1:${redisPort}` });
  const connected = client.connect();
  return sessionId => {
    const store = new RedisEventStore(client, { sessionId });
    // The client connects in the background; every call waits for it.
    for (const name of ['storeEvent', 'replayEventsAfter', 'getStreamIdForEventId']) {
      const method = store[name];
      if (typeof method === 'function')
        store[name] = async (...args) => {
          await connected;
          return method.apply(store, args);
        };
    }
    return store;
  };
}

class MemoryLog {
  events = new Map();
  streams = new Map();
  async append(key, id, record) {
    this.events.set(id, record);
    if (!this.streams.has(key)) this.streams.set(key, []);
    this.streams.get(key).push(id);
  }
  async get(id) {
    return this.events.get(id);
  }
  async list(key) {
    return this.streams.get(key) ?? [];
  }
}

class RedisLog {
  constructor(port) {
    this.client = connectRedis(port);
  }
  async append(key, id, record) {
    const redis = await this.client;
    await redis.command('HSET', `fw:ev:${id}`, 'key', key, 'stream', record.stream, 'session', record.session);
    await redis.command('HSET', `fw:ev:${id}`, 'message', JSON.stringify(record.message));
    await redis.command('RPUSH', `fw:st:${key}`, id);
  }
  async get(id) {
    const redis = await this.client;
    const flat = await redis.command('HGETALL', `fw:ev:${id}`);
    if (!flat || flat.length === 0) return undefined;
    const h = {};
    for (let i = 0; i < flat.length; i += 2) h[flat[i]] = flat[i + 1];
    return { key: h.key, stream: h.stream, session: h.session, message: JSON.parse(h.message) };
  }
  async list(key) {
    return (await (await this.client).command('LRANGE', `fw:st:${key}`, 0, -1)) ?? [];
  }
}

class SharedLogStore {
  constructor(log, sessionId, keys) {
    this.log = log;
    this.sessionId = sessionId;
    this.keys = keys;
    if (keys === 'refuse-foreign') {
      this.getStreamIdForEventId = async eventId => {
        const event = await this.log.get(eventId);
        return event && event.session === this.sessionId ? event.stream : undefined;
      };
    }
  }
  keyOf(streamId) {
    return this.keys === 'sdk' ? streamId : `${this.sessionId}/${streamId}`;
  }
  async storeEvent(streamId, message) {
    const id = `${streamId}_${Date.now()}_${Math.random().toString(36).slice(2, 10).padEnd(8, '0')}`;
    const key = this.keyOf(streamId);
    await this.log.append(key, id, { key, stream: streamId, session: this.sessionId, message });
    return id;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const event = await this.log.get(lastEventId);
    if (!event) return '';
    const ids = await this.log.list(event.key);
    const at = ids.indexOf(lastEventId);
    for (const id of ids.slice(at + 1)) {
      const later = await this.log.get(id);
      if (later) await send(id, later.message);
    }
    return event.stream;
  }
}

export function createSharedStoreFactory({ backend = 'memory', redisPort, keys = 'sdk' }) {
  if (keys === 'deploy') return deployStoreFactory(redisPort);
  const log = backend === 'redis' ? new RedisLog(redisPort) : new MemoryLog();
  // keys 'sdk': one object for every session, as the SDK's ssePollingExample shares its store; otherwise one view per
  // session (the store must know the session to key by it).
  let shared;
  return sessionId => {
    if (keys === 'sdk') {
      shared ??= new SharedLogStore(log, undefined, 'sdk');
      return shared;
    }
    return new SharedLogStore(log, sessionId, keys);
  };
}
