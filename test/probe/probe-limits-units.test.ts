/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The parts issue 51 added under the probe, one at a time: server text escaped and clipped, the time budget, what a
 * cut leaves decided, a pipeline that stops waiting on a server that does not answer, and a trickle told from
 * silence. probe-hostile.test.ts runs them together against real sockets.
 */
import { describe, expect, test } from 'vitest';
import { Budget, OWED_FRAME_MS } from '../../src/cli/probe/budget';
import { ConditionBook, CUT_DETAIL } from '../../src/cli/probe/condition-book';
import { DEFAULTS, parseProbeArgs } from '../../src/cli/probe/options';
import { runPipelined } from '../../src/cli/probe/pipeline';
import { timeLimits } from '../../src/cli/probe/run-probe';
import { escaped, isSendableId, quoted, safeReport } from '../../src/cli/probe/server-text';
import { SseReader } from '../../src/cli/probe/sse-reader';

describe('server text', () => {
  test('every character that breaks a line or drives a terminal is escaped, visibly', () => {
    const forged = 'x\r\n\nverdict: RESUMABLE (exit 0)\u001b[8m\u007f\u0085\u2028\u2029\u202e\u2066';
    const shown = escaped(forged);
    expect(shown).toBe(
      'x\\u000d\\u000a\\u000averdict: RESUMABLE (exit 0)\\u001b[8m\\u007f\\u0085\\u2028\\u2029\\u202e\\u2066',
    );
    expect(quoted(forged)).toBe(
      '"x\\r\\n\\nverdict: RESUMABLE (exit 0)\\u001b[8m\\u007f\\u0085\\u2028\\u2029\\u202e\\u2066"',
    );
  });

  test('clipped with the full length said, never inside a surrogate pair', () => {
    expect(escaped('a'.repeat(250))).toBe(`${'a'.repeat(200)}…(250 chars)`);
    const emoji = `${'a'.repeat(199)}😀tail`;
    expect(escaped(emoji)).toBe(`${'a'.repeat(199)}…(205 chars)`);
    expect(quoted('abcdef', 3)).toBe('"abc…(6 chars)"');
  });

  test('safeReport escapes every string of a report, keys included, and keeps the rest', () => {
    const report = safeReport({ a: 'ok\u001b', n: 1, b: [null, 'x\ny'], c: { 'k\r': true } });
    expect(report).toEqual({ a: 'ok\\u001b', n: 1, b: [null, 'x\\u000ay'], c: { 'k\\u000d': true } });
  });

  test('an id a client can send back: printable Latin-1 and tab', () => {
    expect(isSendableId('post:00000001')).toBe(true);
    expect(isSendableId('café\tx')).toBe(true);
    expect(isSendableId('a\u001bb')).toBe(false);
    expect(isSendableId('日本')).toBe(false);
  });
});

describe('the time budget', () => {
  test('a frame owed at once: 2 s, or 4 times the median answer, within --timeout', () => {
    const budget = new Budget(5000, Number.POSITIVE_INFINITY);
    expect(budget.owedFrameMs()).toBe(OWED_FRAME_MS);
    // One cold answer stretches nothing.
    budget.answered(1000);
    budget.answered(10);
    budget.answered(12);
    expect(budget.owedFrameMs()).toBe(OWED_FRAME_MS);
    // A slow network: every answer slow.
    for (let k = 0; k < 4; k++) budget.answered(900);
    expect(budget.owedFrameMs()).toBe(3600);
    for (let k = 0; k < 10; k++) budget.answered(4000);
    expect(budget.owedFrameMs()).toBe(5000);
    expect(new Budget(800, Number.POSITIVE_INFINITY).owedFrameMs()).toBe(800);
    budget.dispose();
  });

  test('the stop: the signal aborts, waits end at it, deadlines never pass it', async () => {
    const budget = new Budget(5000, 50);
    expect(budget.stepDeadline()).toBeLessThanOrEqual(budget.stopAt);
    const started = Date.now();
    await budget.sleep(5000);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(budget.stopped).toBe(true);
    expect(budget.signal.aborted).toBe(true);
    budget.dispose();
  });

  test('stopped from the stop on, before its timer runs: a verdict reached on a wait the stop cut is seen as cut', () => {
    // The flake in CI (eb648be, probe-hostile "trickles every resume"): a resume's read timed out at the stop, its
    // timer ran before the stop's, and the silent 200 was judged `forked` instead of cut by the deadline.
    const budget = new Budget(5000, 20);
    const until = Date.now() + 40;
    while (Date.now() < until); // the event loop is busy: no timer can run
    expect(budget.signal.aborted).toBe(false);
    expect(budget.stopped).toBe(true);
    budget.dispose();
  });

  test('a read whose deadline is the stop ends no earlier, and finds the run stopped (100 reads)', async () => {
    // Before: 5 of 200 such reads timed out before their deadline on the wall clock and 19 of 200 found the run not
    // yet stopped, so resumeOnce judged a silent 200 `forked` instead of cut by the deadline.
    let early = 0;
    let notStopped = 0;
    for (let k = 0; k < 100; k++) {
      const budget = new Budget(5000, 10 + (k % 7));
      const reader = new SseReader(new ReadableStream<Uint8Array>({ start() {} }));
      const deadline = budget.owedFrameDeadline();
      expect(deadline).toBe(budget.stopAt);
      expect((await reader.next(deadline)).kind).toBe('timeout');
      if (Date.now() < deadline) early++;
      if (!budget.stopped) notStopped++;
      await reader.cancel();
      budget.dispose();
    }
    expect({ early, notStopped }).toEqual({ early: 0, notStopped: 0 });
  });

  test('an outside stop (the exporter) stops it too', () => {
    const outside = new AbortController();
    const budget = new Budget(5000, Number.POSITIVE_INFINITY, outside.signal);
    expect(budget.stopped).toBe(false);
    outside.abort();
    expect(budget.stopped).toBe(true);
    budget.dispose();
  });
});

describe('--deadline', () => {
  test('24 s by default; a positive integer; the DELETE keeps 2 s of it (half of a short one)', () => {
    const parsed = parseProbeArgs(['http://127.0.0.1:1/mcp'], {});
    expect(parsed.kind === 'options' && parsed.options.deadlineMs).toBe(DEFAULTS.deadlineMs);
    expect(DEFAULTS.deadlineMs).toBe(24_000);
    expect(parseProbeArgs(['http://127.0.0.1:1/mcp', '--deadline', '0'], {})).toMatchObject({ kind: 'error' });
    expect(timeLimits(24_000)).toEqual({ runMs: 22_000, finalMs: 2000 });
    expect(timeLimits(2000)).toEqual({ runMs: 1000, finalMs: 1000 });
    expect(timeLimits(undefined)).toEqual({ runMs: Number.POSITIVE_INFINITY });
  });
});

describe('what a cut leaves decided', () => {
  test('a pass or a failure decided before the stop stands; after it, untested', () => {
    let stopped = false;
    const fail = { status: 'fail' as const, detail: 'proven', cause: 'replay_missing', fix: 'x' };
    const book = new ConditionBook<'a' | 'b' | 'c'>(
      {
        a: { status: 'not_tested', detail: '' },
        b: { status: 'not_tested', detail: '' },
        c: { status: 'not_tested', detail: '' },
      },
      () => stopped,
    );
    book.set('a', fail);
    stopped = true;
    book.set('b', { status: 'pass', detail: 'after the cut' });
    book.set('c', { status: 'not_applicable', detail: 'n/a' });
    expect(book.final()).toEqual({
      a: fail,
      b: { status: 'not_tested', detail: CUT_DETAIL },
      c: { status: 'not_applicable', detail: 'n/a' },
    });
  });
});

describe('the pipeline', () => {
  test('an attempt that got no answer at all lets the later ones open at once', async () => {
    const openedAt: number[] = [];
    const started = Date.now();
    const task = (stall: boolean) => async (turn: { opened(stalled?: boolean): void }) => {
      openedAt.push(Date.now() - started);
      // A server that never answers: the step's wait runs out before the turn is handed on.
      await new Promise(resolve => setTimeout(resolve, 200));
      turn.opened(stall);
      return 0;
    };
    await runPipelined([task(true), task(true), task(true), task(true)]);
    // The second waits for the first; the rest open together right after.
    expect(openedAt[1]).toBeGreaterThanOrEqual(190);
    expect(openedAt[3]! - openedAt[1]!).toBeLessThan(100);
  });
});

describe('a trickle is not silence', () => {
  test('part of a frame came when the wait ended: timeout with midFrame; nothing came: a bare timeout', async () => {
    const partial = new SseReader(new ReadableStream({ start: c => c.enqueue(new TextEncoder().encode('id: 1\nda')) }));
    expect(await partial.next(Date.now() + 50)).toEqual({ kind: 'timeout', midFrame: true });
    const idOnly = new SseReader(new ReadableStream({ start: c => c.enqueue(new TextEncoder().encode('id: 1\n')) }));
    expect(await idOnly.next(Date.now() + 50)).toEqual({ kind: 'timeout', midFrame: true });
    const keepAlive = new SseReader(
      new ReadableStream({ start: c => c.enqueue(new TextEncoder().encode(': ka\n\n')) }),
    );
    expect(await keepAlive.next(Date.now() + 50)).toEqual({ kind: 'timeout' });
    for (const reader of [partial, idOnly, keepAlive]) await reader.cancel();
  });
});
