/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The ESM loader hooks forkwatch/register (and forkwatch/hooks alone) installs, from the import-in-the-middle copy that forkwatch's
 * @opentelemetry/instrumentation uses: a loader from another copy would never see the instrumentation's hooks, and
 * patch nothing.
 *
 * - `module.registerHooks` (synchronous, in the app's thread) where the runtime runs import-in-the-middle's
 *   synchronous loader (its `supportsSyncHooks()`: Node >= 22.22.3, 24.11.1, 25.1, 26) and that copy ships it
 *   (import-in-the-middle >= 3.1). Node 26 deprecates `module.register()` (DEP0205) and warns on every start.
 * - `module.register` (a loader thread) elsewhere: Node 20.6 to 22.22.2 and 24.0 to 24.11.0, or an older
 *   import-in-the-middle.
 *
 * On the synchronous path a resolve hook of forkwatch's own goes in after import-in-the-middle's (so it runs first and
 * sees its answer): see builtinFormatKept.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/** How the loader went in: synchronous hooks, the loader thread, not at all (a Node.js with neither), or earlier. */
export type EsmLoader = 'sync' | 'async' | 'none' | 'already';

/** Set once per process, whichever entry (forkwatch/register, forkwatch/hooks) installs the loader first. */
const ESM_HOOK_KEY = Symbol.for('forkwatch.esm-hook');

interface SyncHooksModule {
  register(options?: object): void;
  supportsSyncHooks(): boolean;
}

interface NodeModule {
  register?: (specifier: string) => void;
  registerHooks?: (hooks: { resolve?: ResolveHook }) => unknown;
}

interface ResolveContext {
  parentURL?: string;
}
interface ResolveResult {
  url: string;
  format?: string | null;
  shortCircuit?: boolean;
}
type ResolveHook = (
  specifier: string,
  context: ResolveContext,
  nextResolve: (specifier: string, context?: ResolveContext) => ResolveResult,
) => ResolveResult;

/** Installs the loader once; throws only what `module.register` itself throws (the entries say it on stderr). */
export function installEsmLoader(): EsmLoader {
  const globals = globalThis as Record<symbol, unknown>;
  if (globals[ESM_HOOK_KEY]) return 'already';
  globals[ESM_HOOK_KEY] = true;
  const mod = require('node:module') as NodeModule;
  const iitm = createRequire(require.resolve('@opentelemetry/instrumentation'));
  if (typeof mod.registerHooks === 'function') {
    const sync = loadSyncHooks(iitm);
    if (sync?.supportsSyncHooks()) {
      sync.register();
      mod.registerHooks({ resolve: builtinFormatKept });
      return 'sync';
    }
  }
  if (typeof mod.register !== 'function') return 'none';
  mod.register(pathToFileURL(iitm.resolve('import-in-the-middle/hook.mjs')).href);
  return 'async';
}

/** import-in-the-middle's synchronous registration (an ES module, loaded with require(esm)); undefined if absent. */
function loadSyncHooks(iitm: NodeRequire): SyncHooksModule | undefined {
  try {
    const sync = iitm('import-in-the-middle/register-hooks.mjs') as Partial<SyncHooksModule>;
    return typeof sync.register === 'function' && typeof sync.supportsSyncHooks === 'function'
      ? (sync as SyncHooksModule)
      : undefined;
  } catch {
    // An import-in-the-middle before 3.1, or a Node.js without require(esm): the loader thread serves.
    return undefined;
  }
}

/**
 * Workaround for import-in-the-middle's synchronous resolve hook (3.1 to 3.6 at least; not yet fixed upstream): it
 * takes every resolution without a `parentURL` for the entry point and, its URL having no extension, answers
 * `format: 'commonjs'` (the extensionless-entry rule of nodejs/import-in-the-middle#9). Under `node -e`, `-p` and the
 * REPL, Node's own `require('module')` for the eval context resolves with no parent (nodejs/node#58607 shows it), so
 * `node:module` comes back as CommonJS and Node's default load reads a file named `module`: ENOENT before the host's
 * first line. A builtin URL answered as CommonJS for no parent is put back to `builtin`; nothing else is touched.
 */
const builtinFormatKept: ResolveHook = (specifier, context, nextResolve) => {
  const result = nextResolve(specifier, context);
  if (!context.parentURL && result.format === 'commonjs' && result.url.startsWith('node:'))
    return { ...result, format: 'builtin' };
  return result;
};
