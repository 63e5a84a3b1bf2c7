/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * bench/ablations.mjs, the cut builds issue 50's passes measure: each must still apply to today's build (its edit finds
 * its text once), change what it says it changes, and load. A build that moved under an edit fails here, before a
 * bench measures an unedited copy under the ablation's name.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { ABLATIONS, makeAblations } from '../../bench/ablations.mjs';

const root = join(__dirname, '..', '..');
const build = join(root, 'build', 'src');
// Under the repository, so the copies resolve forkwatch's dependencies from its node_modules as the build does.
mkdirSync(join(root, '.tmp'), { recursive: true });
const out = mkdtempSync(join(root, '.tmp', 'ablations-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const made: Record<string, string> = makeAblations(out, { from: build });

test.each(Object.keys(ABLATIONS))('%s applies to the build, changes it, and loads', name => {
  const src = made[name]!;
  const { edits } = ABLATIONS[name] as { edits: { file: string }[] };
  for (const { file } of edits) {
    expect(readFileSync(join(src, file), 'utf8')).not.toBe(readFileSync(join(build, file), 'utf8'));
  }
  const load = createRequire(join(src, 'index.js'));
  for (const { file } of edits) expect(() => load(join(src, file))).not.toThrow();
});

test('twice-copy holds a second copy of the build that its patch loads', () => {
  const load = createRequire(join(made['twice-copy']!, 'index.js'));
  const copy = load(join(made['twice-copy']!, '_copy', 'server', 'stacks', 'sdk', 'patch.js'));
  expect(typeof copy.patchWebStandardStreamableHttpServer).toBe('function');
});

test('an edit whose text is not in the build exactly once fails, naming the count', () => {
  const altered = join(out, 'altered');
  cpSync(build, altered, { recursive: true });
  const patch = join(altered, 'server', 'stacks', 'sdk', 'patch.js');
  const text = readFileSync(patch, 'utf8');
  writeFileSync(patch, text.replace('function patchServer(', 'function patchServerRenamed('));
  expect(() => makeAblations(join(out, 'moved'), { from: altered, names: ['inert'] })).toThrow(/0 times, not once/);
  writeFileSync(patch, `${text}\n${text}`);
  expect(() => makeAblations(join(out, 'doubled'), { from: altered, names: ['inert'] })).toThrow(/2 times, not once/);
  expect(() => makeAblations(join(out, 'unknown'), { from: build, names: ['nothing'] })).toThrow(/no ablation nothing/);
});

test('the server cuts patch what they say: inert nothing, pass every method by a pass-through, pass-requests two', () => {
  const wrapsOf = (name: string) => {
    const load = createRequire(join(made[name]!, 'index.js'));
    const { patchWebStandardStreamableHttpServer } = load(join(made[name]!, 'server', 'stacks', 'sdk', 'patch.js'));
    const wrapped: string[] = [];
    const proto: Record<string, unknown> = {};
    const wrap = (target: Record<string, unknown>, method: string, wrapper: (f: unknown) => unknown) => {
      wrapped.push(method);
      target[method] = wrapper(function (this: unknown, ...args: unknown[]) {
        return [this, ...args];
      });
    };
    patchWebStandardStreamableHttpServer(proto, { enabled: true }, wrap);
    return { wrapped, proto };
  };
  expect(wrapsOf('inert').wrapped).toEqual([]);
  const pass = wrapsOf('pass');
  expect(pass.wrapped).toEqual(['handleRequest', 'handleGetRequest', 'replayEvents', 'writeSSEEvent', 'send', 'close']);
  const self = {};
  expect((pass.proto.send as (...a: unknown[]) => unknown).call(self, 1, 2)).toEqual([self, 1, 2]);
  expect(wrapsOf('pass-requests').wrapped).toEqual(['handleRequest', 'handleGetRequest']);
});

test('inert-ballast keeps BALLAST_KB of heap and loads nothing of forkwatch', () => {
  const src = made['inert-ballast']!;
  const load = createRequire(join(src, 'index.js'));
  const before = process.env.BALLAST_KB;
  process.env.BALLAST_KB = '10';
  try {
    // The test of every cut loaded it once with the default already: load it again.
    delete load.cache[load.resolve(join(src, 'register.js'))];
    load(join(src, 'register.js'));
  } finally {
    if (before === undefined) delete process.env.BALLAST_KB;
    else process.env.BALLAST_KB = before;
  }
  const ballast = (globalThis as { __forkwatchBallast?: unknown[] }).__forkwatchBallast;
  expect(ballast).toHaveLength(50);
  delete (globalThis as { __forkwatchBallast?: unknown[] }).__forkwatchBallast;
  expect(Object.keys(load.cache).filter(file => file.startsWith(src) && !file.endsWith('register.js'))).toEqual([]);
});
