/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The pure per-request decisions (src/core/per-request*.ts): exchange ends, re-issue matching, digests, frames. */
import { describe, expect, test } from 'vitest';
import {
  BoundedRegistry,
  ListenGaps,
  ReissueMatcher,
  ReissueWindow,
  SseDataScanner,
  canonicalJson,
  classifyFrameData,
  createdTaskId,
  digestJson,
  idempotencyOf,
  isMrtrRetry,
  isTaskMissError,
  judgeExchangeClose,
  judgeListenEnd,
  judgeStreamEnd,
  judgeTaskMiss,
  MAX_REISSUE_KEY_CHARS,
  reissueKey,
  requestTarget,
} from '../../src/core';

describe('server exchange decisions', () => {
  test('close: delivered, before any response (499), mid-stream; unconfirmed behind a balancer that hides closes', () => {
    const seen = { closesHidden: false };
    expect(judgeExchangeClose({ ...seen, terminalDelivered: true, responseStarted: true })).toBe('delivered');
    expect(judgeExchangeClose({ ...seen, terminalDelivered: true, responseStarted: false })).toBe('delivered');
    expect(judgeExchangeClose({ ...seen, terminalDelivered: false, responseStarted: false })).toBe(
      'closed_before_response',
    );
    expect(judgeExchangeClose({ ...seen, terminalDelivered: false, responseStarted: true })).toBe('closed_mid_stream');
    const hidden = { closesHidden: true };
    expect(judgeExchangeClose({ ...hidden, terminalDelivered: true, responseStarted: true })).toBe('unconfirmed');
    // A close the server did see is a break whatever the balancer.
    expect(judgeExchangeClose({ ...hidden, terminalDelivered: false, responseStarted: true })).toBe(
      'closed_mid_stream',
    );
  });

  test('MRTR retries are recognised by inputResponses or requestState', () => {
    expect(isMrtrRetry({ name: 't', requestState: 's' })).toBe(true);
    expect(isMrtrRetry({ name: 't', inputResponses: {} })).toBe(true);
    expect(isMrtrRetry({ name: 't', arguments: { requestState: 'x' } })).toBe(false);
    expect(isMrtrRetry(undefined)).toBe(false);
  });

  test('idempotency: only tools/call with idempotentHint true is idempotent (the hint defaults to false)', () => {
    expect(idempotencyOf('tools/call', true)).toBe('idempotent');
    expect(idempotencyOf('tools/call', false)).toBe('not_idempotent');
    expect(idempotencyOf('tools/call', undefined)).toBe('not_idempotent');
    expect(idempotencyOf('resources/read', true)).toBe('not_a_tool');
  });

  test('the request target ignores _meta and MRTR fields, and keys arguments by name', () => {
    const a = requestTarget('tools/call', { name: 'w', arguments: { b: 1, a: 2 }, _meta: { x: 1 } });
    const b = requestTarget('tools/call', { name: 'w', arguments: { a: 2, b: 1 }, _meta: { y: 2 }, requestState: 's' });
    expect(a.name).toBe('w');
    expect(digestJson(a.args)).toBe(digestJson(b.args));
    expect(requestTarget('resources/read', { uri: 'file:///x', _meta: {} })).toEqual({
      name: 'file:///x',
      args: { uri: 'file:///x' },
    });
    expect(requestTarget('tasks/get', { taskId: 't1' }).name).toBe('t1');
  });

  test('digests: key order does not matter, values do; huge values are bounded', () => {
    expect(digestJson({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(digestJson({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(digestJson({ a: 1 })).not.toBe(digestJson({ a: 2 }));
    expect(digestJson({ a: '1' })).not.toBe(digestJson({ a: 1 }));
    const huge = { blob: 'x'.repeat(1_000_000) };
    expect(canonicalJson(huge).length).toBeLessThanOrEqual(65_536);
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(() => digestJson(deep)).not.toThrow();
  });

  test('the re-issue window: one match per break, within the window, bounded, expired in time order', () => {
    const w = new ReissueWindow(1000, 2);
    w.noteBroken('k1', { at: 0, idempotency: 'not_idempotent' });
    expect(w.match('k1', 500)?.idempotency).toBe('not_idempotent');
    expect(w.match('k1', 600)).toBeUndefined(); // consumed
    w.noteBroken('k2', { at: 0, idempotency: 'idempotent' });
    expect(w.match('k2', 1500)).toBeUndefined(); // too late
    w.noteBroken('a', { at: 10, idempotency: 'not_a_tool' });
    w.noteBroken('b', { at: 20, idempotency: 'not_a_tool' });
    expect(w.noteBroken('c', { at: 30, idempotency: 'not_a_tool' })?.at).toBe(10); // bounded: the oldest goes
    expect(w.size).toBe(2);
    expect(w.nextExpiry()).toBe(1020);
    expect(w.expire(1025).map(e => e.at)).toEqual([20]);
    expect(w.size).toBe(1);
  });

  test('re-issue matching does not depend on whether the break or the re-issue reaches the server first', () => {
    const m = new ReissueMatcher(1000, 10);
    const risk = (at: number) => ({ at, idempotency: 'not_idempotent' as const });
    // Break first, then the re-issue.
    const a = {};
    m.started('k', a, 0);
    expect(m.ended('k', a, 100, { entry: risk(100), broken: true })).toBeUndefined();
    expect(m.started('k', {}, 150)?.at).toBe(100);
    // The re-issue first (the close notice came 500 ms late), then the break: matched at the break.
    const b = {};
    m.started('f', b, 1000);
    const reissue = {};
    expect(m.started('f', reissue, 1100)).toBeUndefined();
    expect(m.ended('f', b, 1600, { entry: risk(1600), broken: true })?.at).toBe(1600);
    // Consumed: a third like request is no second re-issue of that break.
    expect(m.started('f', {}, 1700)).toBeUndefined();
    // Two like requests that both end with their response: nothing.
    const c = {};
    m.started('h', c, 2000);
    m.started('h', {}, 2010);
    expect(m.ended('h', c, 2050, undefined)).toBeUndefined();
    // A follower long before the late close notice (beyond the window) is no re-issue; the break waits for one.
    const d = {};
    m.started('l', d, 3000);
    m.started('l', {}, 3001);
    expect(m.ended('l', d, 5000, { entry: risk(5000), broken: true })).toBeUndefined();
    expect(m.started('l', {}, 5100)?.at).toBe(5000);
    // Unconfirmed (closes hidden): only a request that came while it was open is its re-issue; none after.
    const u = {};
    m.started('u', u, 6000);
    expect(m.ended('u', u, 6100, { entry: risk(6100), broken: false })).toBeUndefined();
    expect(m.started('u', {}, 6200)).toBeUndefined();
    const v = {};
    m.started('v', v, 7000);
    m.started('v', {}, 7050);
    expect(m.ended('v', v, 7100, { entry: risk(7100), broken: false })?.at).toBe(7100);
  });

  test('the matcher holds a bounded number of keys of open exchanges', () => {
    const m = new ReissueMatcher(1000, 3);
    for (let i = 0; i < 10; i++) m.started(`k${i}`, {}, i);
    expect(m.openSize).toBe(3);
    const x = {};
    m.started('x', x, 20);
    m.ended('x', x, 30, undefined);
    expect(m.openSize).toBe(2);
  });

  test('tasks: created ids, misses expired against unknown, the bounded registry', () => {
    expect(createdTaskId({ task: { taskId: 't-1', status: 'working' } })).toBe('t-1');
    expect(createdTaskId({ content: [] })).toBeUndefined();
    expect(isTaskMissError({ code: -32602, message: 'Task not found: t-1' })).toBe(true);
    expect(isTaskMissError({ code: -32602, message: 'Invalid params' })).toBe(false);
    expect(isTaskMissError({ code: -32603, message: 'Task not found' })).toBe(false);
    expect(judgeTaskMiss(true, 'Task not found')).toBe('expired');
    expect(judgeTaskMiss(false, 'Task has expired')).toBe('expired');
    expect(judgeTaskMiss(false, 'Task not found')).toBe('unknown');
    const r = new BoundedRegistry(2);
    r.add('a', 1);
    r.add('b', 2);
    r.add('c', 3);
    expect([r.has('a'), r.has('b'), r.has('c'), r.size]).toEqual([false, true, true, 2]);
  });
});

describe('client decisions', () => {
  test('stream ends: completed, ended early, broken, cancelled', () => {
    expect(judgeStreamEnd('eof', true, false)).toBe('completed');
    expect(judgeStreamEnd('eof', false, false)).toBe('ended_early');
    expect(judgeStreamEnd('error', false, false)).toBe('broken');
    expect(judgeStreamEnd('error', false, true)).toBe('cancelled');
    expect(judgeStreamEnd('cancel', false, false)).toBe('cancelled');
    expect(judgeListenEnd('eof', true, false)).toBe('closed');
    expect(judgeListenEnd('eof', false, false)).toBe('dropped');
    expect(judgeListenEnd('error', false, true)).toBe('cancelled');
  });

  test('frames: responses are terminal, the acknowledgement is an ack, notifications are other', () => {
    expect(classifyFrameData('{"result":{},"jsonrpc":"2.0","id":3}', false)).toBe('terminal');
    expect(classifyFrameData('{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}', false)).toBe('terminal');
    expect(
      classifyFrameData('{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}', false),
    ).toBe('ack');
    expect(classifyFrameData('{"jsonrpc":"2.0","method":"notifications/progress","params":{}}', false)).toBe('other');
    expect(classifyFrameData('not json', false)).toBe('other');
    expect(classifyFrameData(`{"result":{"content":"${'x'.repeat(300)}`, true)).toBe('terminal');
    expect(classifyFrameData(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`, true)).toBe(
      'other',
    );
  });

  test('the SSE scanner joins data lines, handles CRLF and chunks split anywhere, and bounds a frame', () => {
    const text = 'event: message\r\ndata: {"a":\r\ndata: 1}\r\n\r\n: keepalive\n\ndata: {"b":2}\n\n';
    const bytes = new TextEncoder().encode(text);
    for (let split = 1; split < bytes.length; split++) {
      const frames: string[] = [];
      const scanner = new SseDataScanner(d => frames.push(d));
      scanner.push(bytes.slice(0, split));
      scanner.push(bytes.slice(split));
      scanner.end();
      expect(frames, `split at ${split}`).toEqual(['{"a":\n1}', '{"b":2}']);
    }
    const seen: [number, boolean][] = [];
    const bounded = new SseDataScanner((d, truncated) => seen.push([d.length, truncated]), 100);
    bounded.push(new TextEncoder().encode(`data: ${'y'.repeat(10_000)}\n\n`));
    expect(seen).toEqual([[100, true]]);
  });

  test('listen gaps: from the drop to the next ack of the same key, once; bounded', () => {
    const g = new ListenGaps(2);
    g.noteDrop('k', 100);
    expect(g.ack('other', 150)).toBeUndefined();
    expect(g.ack('k', 350)).toBe(250);
    expect(g.ack('k', 400)).toBeUndefined();
    g.noteDrop('a', 1);
    g.noteDrop('b', 2);
    g.noteDrop('c', 3);
    expect(g.size).toBe(2);
    expect(g.ack('a', 10)).toBeUndefined();
  });
});

describe('reissueKey', () => {
  test('a key of normal parts is those parts; a longer one a fixed-size digest, equal for equal parts', () => {
    expect(reissueKey('anonymous', 'tools/call', 'write', 'd:2')).toBe('anonymous\u0000tools/call\u0000write\u0000d:2');
    const huge = 'x'.repeat(999_000);
    const key = reissueKey('anonymous', 'tools/call', huge, 'd:2');
    expect(key.length).toBeLessThan(32);
    expect(reissueKey('anonymous', 'tools/call', huge, 'd:2')).toBe(key);
    expect(reissueKey('anonymous', 'tools/call', `${huge.slice(1)}y`, 'd:2')).not.toBe(key);
    expect(reissueKey('client:other', 'tools/call', huge, 'd:2')).not.toBe(key);
    const longest = 'n'.repeat(MAX_REISSUE_KEY_CHARS - 'anonymous'.length - 'tools/call'.length - 'd:2'.length - 3);
    expect(reissueKey('anonymous', 'tools/call', longest, 'd:2')).toHaveLength(MAX_REISSUE_KEY_CHARS);
  });
});
