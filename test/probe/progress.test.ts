/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The probe's progress line: one rewritten line on a terminal, nothing on a pipe; the pipeline that feeds it. */
import { describe, expect, test } from 'vitest';
import { runPipelined } from '../../src/cli/probe/pipeline';
import { progressLine } from '../../src/cli/probe/progress';

/** `columns` given (even as undefined) is the terminal's; left out, 60. */
function stream(isTTY: boolean, ...rest: [columns?: number]) {
  const writes: string[] = [];
  return { isTTY, columns: rest.length > 0 ? rest[0] : 60, writes, write: (text: string) => writes.push(text) };
}

describe('progress line', () => {
  test('on a terminal: each phrase rewrites the same line, clear() erases it', () => {
    const tty = stream(true);
    const line = progressLine(tty, Date.now());
    line.sink('opening a session');
    line.sink('resumes: 3/12 answered');
    line.clear();
    expect(tty.writes).toHaveLength(3);
    expect(tty.writes[0]).toMatch(/^\r\x1b\[2Kforkwatch probe: opening a session \(\d+\.\d s\)$/);
    expect(tty.writes[1]).toMatch(/^\r\x1b\[2Kforkwatch probe: resumes: 3\/12 answered/);
    expect(tty.writes[2]).toBe('\r\x1b[2K');
    expect(tty.writes.every(w => !w.includes('\n'))).toBe(true);
  });

  test('cut to the terminal width, so it never wraps', () => {
    const tty = stream(true);
    progressLine(tty).sink('x'.repeat(200));
    expect(tty.writes[0]!.replace('\r\x1b[2K', '').length).toBe(59);
  });

  test('a terminal that reports 0 columns (or none) gets 80, not a 20-character stub', () => {
    for (const columns of [0, undefined, Number.NaN]) {
      const tty = stream(true, columns);
      progressLine(tty).sink('x'.repeat(200));
      expect(tty.writes[0]!.replace('\r\x1b[2K', '').length).toBe(79);
    }
    const narrow = stream(true, 10);
    progressLine(narrow).sink('x'.repeat(200));
    expect(narrow.writes[0]!.replace('\r\x1b[2K', '').length).toBe(20);
  });

  test('piped: nothing at all, not even the erase', () => {
    const pipe = stream(false);
    const line = progressLine(pipe);
    line.sink('opening a session');
    line.clear();
    expect(pipe.writes).toEqual([]);
  });
});

describe('pipeline', () => {
  test('opens in order, one after the previous has opened, and waits for all together', async () => {
    const events: string[] = [];
    const releases: Array<() => void> = [];
    const settled: number[] = [];
    const task = (n: number) => async (turn: { opened(): void }) => {
      events.push(`open ${n}`);
      turn.opened();
      await new Promise<void>(resolve => releases.push(resolve));
      events.push(`done ${n}`);
      return n;
    };
    const all = runPipelined([task(1), task(2), task(3)], done => settled.push(done));
    // All three opened before any finished: their waits overlap.
    await waitFor(() => releases.length === 3);
    expect(events).toEqual(['open 1', 'open 2', 'open 3']);
    releases[1]!();
    releases[0]!();
    releases[2]!();
    expect(await all).toEqual([1, 2, 3]);
    expect(settled).toEqual([1, 2, 3]);
  });

  test('a task that finishes without calling opened() does not stall the next one', async () => {
    expect(await runPipelined([async () => 'a', async () => 'b'])).toEqual(['a', 'b']);
  });

  test('earlier settles once every earlier task has finished', async () => {
    let release!: () => void;
    const order: string[] = [];
    await runPipelined<string>([
      async turn => {
        turn.opened();
        await new Promise<void>(resolve => (release = resolve));
        order.push('first done');
        return 'first';
      },
      async turn => {
        turn.opened();
        setImmediate(() => release());
        await turn.earlier;
        order.push('second saw earlier');
        return 'second';
      },
    ]);
    expect(order).toEqual(['first done', 'second saw earlier']);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise(resolve => setImmediate(resolve));
}
