/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * forkwatch loads some of its modules on first use, with require() (src/lifecycle/targets.ts,
 * src/client/wire/fetch-wrapper.ts): in the build that is Node's require. Under vitest, src/ is TypeScript that Node's
 * require cannot load, and a copy loaded beside vitest's would split the state those modules share. This setup
 * loads src/ through vitest, the very instances a test imports, and answers src's own relative require() calls from
 * them. The entry points that act when loaded (register, the CLI) are left out; nothing requires them lazily.
 */
/// <reference types="vite/client" />
import Module from 'node:module';
import { dirname, join, resolve } from 'node:path';

const src = join(__dirname, '../../src');
const loaded = import.meta.glob(
  [
    '../../src/**/*.ts',
    '!../../src/register.ts',
    '!../../src/hooks.ts',
    '!../../src/lifecycle/register.ts',
    '!../../src/cli/**',
  ],
  {
    eager: true,
  },
);
const byPath = new Map(Object.entries(loaded).map(([path, exports]) => [resolve(__dirname, path), exports]));

type Load = (request: string, parent: { filename?: string } | undefined, isMain: boolean) => unknown;
const Loader = Module as unknown as { _load: Load };
const HOOK = Symbol.for('forkwatch.test.src-require');
const state = globalThis as unknown as Record<symbol, Map<string, unknown> | undefined>;

if (!state[HOOK]) {
  const load = Loader._load;
  Loader._load = function (request, parent, isMain) {
    const from = parent?.filename;
    if (from?.startsWith(src) && from.endsWith('.ts') && request.startsWith('.')) {
      // A file (`./patch`), or a folder's index.ts (`../server/stacks/tmcp`), as Node's require resolves them.
      const target = resolve(dirname(from), request);
      const exports = state[HOOK]!.get(`${target}.ts`) ?? state[HOOK]!.get(join(target, 'index.ts'));
      if (exports) return exports;
      throw new Error(`test/setup/src-require.ts: ${from} requires ${request}, which is not a src/ module it loaded`);
    }
    return load.call(this, request, parent, isMain);
  };
}
// Per test file: the instances of this file's module graph.
state[HOOK] = byPath;
