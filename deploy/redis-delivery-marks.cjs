/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// forkwatch's fleet delivery marks on Redis (the `fleetDelivery` option, issue 49), beside deploy/redis-event-store.cjs
// and on the same node-redis client. The event store is not changed: the marks are keys of their own.
//
// Per session S (hash-tagged like the store's keys, so a Redis Cluster keeps them in the session's slot):
//   fw:{S}:pend:s, fw:{S}:pend:r  sorted sets of event ids a replica stored while the stream had no connection
//                                 there (standalone / request streams), scored by the time they were stored
//   fw:{S}:sent                   event ids a replay sent before their pending mark arrived (the mark is then
//                                 never added): the replicas' calls race, the scripts make either order right
// Every call is one Lua script, so a claim removes each mark for exactly one replica, which counts it.
// Every key expires `ttlMs` after its last write: a session whose client went away (no DELETE, no request) leaves its
// marks to expire, counted by no one.
//
//   const { RedisDeliveryMarks } = require('./redis-delivery-marks.cjs');
//   new ForkwatchInstrumentation({ fleetDelivery: new RedisDeliveryMarks(redis) })   // redis: createClient({ url })
// The client may connect after the instrumentation starts; calls made before fail and count nothing.

const PENDING = `
local added = 0
for i = 2, #ARGV, 3 do
  if redis.call('SREM', KEYS[3], ARGV[i]) == 0 then
    local key = KEYS[1]
    if ARGV[i + 2] == '0' then key = KEYS[2] end
    redis.call('ZADD', key, ARGV[i + 1], ARGV[i])
    redis.call('PEXPIRE', key, ARGV[1])
    added = added + 1
  end
end
return added
`;

const DELIVERED = `
for i = 2, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) + redis.call('ZREM', KEYS[2], ARGV[i]) == 0 then
    redis.call('SADD', KEYS[3], ARGV[i])
    redis.call('PEXPIRE', KEYS[3], ARGV[1])
  end
end
return 0
`;

const CLAIM = `
local n = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
if ARGV[2] == '0' then n = n + redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1]) end
return n
`;

class RedisDeliveryMarks {
  /**
   * @param {import('redis').RedisClientType} redis a node-redis client (5 or later), shared with the event store
   * @param {{ ttlMs?: number }} [options] how long marks of a silent session live (default 30 min: forkwatch's maxIdleMs)
   */
  constructor(redis, { ttlMs = 30 * 60_000 } = {}) {
    this.redis = redis;
    this.ttlMs = ttlMs;
  }

  keys(sessionId) {
    const p = `fw:{${sessionId}}`;
    return [`${p}:pend:s`, `${p}:pend:r`, `${p}:sent`];
  }

  pending(sessionId, marks) {
    const args = [String(this.ttlMs)];
    for (const m of marks) args.push(m.eventId, String(m.storedAt), m.standalone ? '1' : '0');
    return this.redis.eval(PENDING, { keys: this.keys(sessionId), arguments: args });
  }

  delivered(sessionId, eventIds) {
    return this.redis.eval(DELIVERED, { keys: this.keys(sessionId), arguments: [String(this.ttlMs), ...eventIds] });
  }

  async claim(sessionId, { storedBefore, standaloneOnly }) {
    const [standalone, request] = this.keys(sessionId);
    return Number(
      await this.redis.eval(CLAIM, {
        keys: [standalone, request],
        arguments: [String(storedBefore), standaloneOnly ? '1' : '0'],
      }),
    );
  }
}

module.exports = { RedisDeliveryMarks };
