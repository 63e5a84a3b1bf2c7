/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire observer never changes a fetch Response: every use an app, a fetch wrapper or an APM agent makes of one
 * (fixtures/response-transparency.cjs: clone, tee, body identity, BYOB, reading twice, cancel…) on every kind of
 * exchange it watches gives the same values and the same errors (class and message) bare, with
 * `new ForkwatchInstrumentation()`, and after disable(), against a real HTTP server on 127.0.0.1, in a child process
 * of the runtime under test. It also shows the observer did observe (the resumes judged, the exchanges counted) and
 * that disable() left nothing: fetch restored, no undici channel subscribed.
 *
 * Runtime: this process's, which `npm test` makes each supported Node.js in turn (scripts/runtimes.mjs): Node 22
 * gets the fetch wrapper (undici 6) beside undici's channels, Node 24 and 26 undici's channels alone, which carry the
 * body chunks. The fetch: the global one, and the `undici` npm package's (mcp-remote's), loaded first (its own Agent
 * is the global dispatcher) or after a global fetch (it runs on the runtime's dispatcher: undici 6 on Node 22, whose
 * requests publish no body chunk and are tapped instead).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { undiciPublishesBodyChunks } from '../../src/client/wire/undici-version';

const root = join(__dirname, '../..');
const fixture = join(__dirname, 'fixtures/response-transparency.cjs');
const built = join(root, 'build/src/index.js');
const runtimes = [process.execPath];

const fetches = ['global', 'undici', 'undici-after-global'] as const;

interface Run {
  node: string;
  undici: string;
  /** Whether the requests of the fetch under test published their body chunks. */
  dispatcherPublishes: boolean;
  bare: Record<string, unknown>;
  instrumented: Record<string, unknown>;
  afterDisable: Record<string, unknown>;
  counted: { resumes: Record<string, number>; exchanges: Record<string, number> };
  countedAfterDisable: Run['counted'];
  installed: { fetchReplaced: boolean; channels: string[] };
  removed: { fetchRestored: boolean; channels: string[] };
}

async function run(node: string, fetch: (typeof fetches)[number]): Promise<Run> {
  const { stdout } = await promisify(execFile)(node, [fixture, built, fetch], { cwd: root, timeout: 90_000 });
  return JSON.parse(stdout) as Run;
}

describe.each(runtimes.flatMap(node => fetches.map(fetch => [node, fetch] as const)))(
  'on %s, %s fetch',
  (node, fetch) => {
    test('every use of every Response gives the same values and errors bare, instrumented and after disable()', async () => {
      const result = await run(node, fetch);
      expect(Object.keys(result.bare).length).toBeGreaterThanOrEqual(100);
      expect(result.instrumented).toEqual(result.bare);
      expect(result.afterDisable).toEqual(result.bare);

      // The observer did its work: the resumes judged (every body read to its end, at least), the exchanges counted.
      const resumed = result.counted.resumes['{transport="streamable_http",outcome="resumed"}'] ?? 0;
      expect(resumed).toBeGreaterThanOrEqual(20);
      expect(Object.keys(result.counted.resumes).filter(k => !/outcome="(resumed|inconclusive)"/.test(k))).toEqual([]);
      if (fetch !== 'global' && !result.dispatcherPublishes) {
        // undici 6 publishes no request body either: a protocol 2026-07-28 POST the package's fetch sends on it is
        // not observed (the runtime's own fetch is: the wrapper reads its Response).
        expect(result.counted.exchanges).toEqual({});
      } else {
        expect(result.counted.exchanges['{outcome="completed"}']).toBeGreaterThanOrEqual(40);
        expect(result.counted.exchanges['{outcome="broken"}']).toBeUndefined();
      }
      // Nothing is observed once disabled.
      expect(result.countedAfterDisable).toEqual(result.counted);

      // The package's fetch loaded first runs on its own undici 7 on every line.
      if (fetch === 'undici') expect(result.dispatcherPublishes).toBe(true);
      expect(result.installed).toEqual({
        fetchReplaced: !undiciPublishesBodyChunks(result.undici),
        // At rest (no exchange watched): a request's start, a session DELETE's answer and failures only; the body
        // and end channels come and go with the watched exchanges (issue 50).
        channels: ['undici:request:create', 'undici:request:headers', 'undici:request:error'],
      });
      expect(result.removed).toEqual({ fetchRestored: true, channels: [] });
    }, 120_000);
  },
);

test('undici publishes body chunks from 7.11.0 on (nodejs/undici#4289)', () => {
  expect(undiciPublishesBodyChunks('6.24.1')).toBe(false);
  expect(undiciPublishesBodyChunks('7.10.0')).toBe(false);
  expect(undiciPublishesBodyChunks('7.11.0')).toBe(true);
  expect(undiciPublishesBodyChunks('7.30.2')).toBe(true);
  expect(undiciPublishesBodyChunks('8.0.0')).toBe(true);
  expect(undiciPublishesBodyChunks('7.11.0-rc.1')).toBe(true);
  expect(undiciPublishesBodyChunks(undefined)).toBe(false);
  expect(undiciPublishesBodyChunks('x')).toBe(false);
});
