/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Where forkwatch finds the MCP SDK's modules: every route hands the one patcher a `ModuleMatch` (the module's
 * exports, the classes to patch in it, its package and version, and the ranges they apply to).
 *
 * One hook per SDK file, as dd-trace-js's `addHook({ name, versions, file })`: SDK_V1_FILES for
 * @modelcontextprotocol/sdk 1.x (a file in `dist/cjs` and `dist/esm`), SDK_V2_PACKAGES for the 2.x packages (their
 * main module). The routes, all reading those two tables through `v1FileOf` and `v2PackageOf`:
 * - `sdkModuleDefinitions`: InstrumentationBase's own hooks (`init()`);
 * - a private CommonJS hook: @modelcontextprotocol/sdk 1.x has no resolvable main entry, so require-in-the-middle's
 *   name-based hooks never fire for it under CommonJS; a hook with the exact file names does;
 * - `require.cache`: an SDK loaded before forkwatch;
 * - a private ESM hook: @opentelemetry/instrumentation of the OpenTelemetry JS 1.x line (0.5x) hooks an ESM package
 *   by its main module only (`internals: false`), so the file definitions never fire there; a hook with
 *   `internals: true` on the same import-in-the-middle copy (the one whose loader forkwatch/register installs) does.
 *   On newer lines both fire, and the patcher patches a class once. It also finds a stack's main module
 *   (STACK_PACKAGES) imported by its file URL, which import-in-the-middle matches by the package name only with
 *   `internals: true`;
 * - ESM dependents (SDK_V2_ESM_DEPENDENTS): the ESM build of the 2.x packages such a dependent imports, found from
 *   its folder.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { DiagLogger } from '@opentelemetry/api';
import { InstrumentationNodeModuleDefinition, InstrumentationNodeModuleFile } from '@opentelemetry/instrumentation';
import { Hook as RequireHook } from 'require-in-the-middle';
import type { PatchRoute } from './instrumentation-info';
import type { ImportInTheMiddleModule } from '../shared/internal-types';
import {
  type PatchTarget,
  SDK_V1_FILES,
  SDK_V1_PACKAGE,
  SDK_V1_SUPPORTED,
  SDK_V2_ESM_DEPENDENTS,
  SDK_V2_PACKAGES,
  SDK_V2_SUPPORTED,
  STACK_PACKAGES,
  type SdkFileTarget,
} from './targets';

/** One module found, and what to patch in it. */
export interface ModuleMatch {
  exports: unknown;
  targets: readonly PatchTarget[];
  /** Its package, or 'manual' for modules handed to manuallyInstrument(). */
  packageName: string;
  version: string | undefined;
  /** The package's supported range; undefined: any version (manual). */
  supported: string | undefined;
  /** Versions in which this file holds these targets, when narrower than `supported` (quietly skipped outside). */
  fileVersions?: string;
  /** Which route found it (forkwatch_instrumentation_info's `route`). */
  route: PatchRoute;
}

export type OnMatch = (match: ModuleMatch) => void;
export type OnUnmatch = (exports: unknown, targets: readonly PatchTarget[]) => void;

/** The running routes; `stop()` removes their hooks. */
export interface ModuleDiscovery {
  stop(): void;
}

/** Forward slashes, whatever the platform. */
const slashes = (path: string) => path.replace(/\\/g, '/');

const V1_FILES = new Map(SDK_V1_FILES.map(target => [target.file, target]));

/**
 * The 1.x SDK file a path inside the package names (`dist/cjs/client/sse`, `dist/esm/client/sse.js`, with either
 * slash), or undefined.
 */
export function v1FileOf(pathInPackage: string): SdkFileTarget | undefined {
  const path = slashes(pathInPackage).replace(/^dist\/(?:cjs|esm)\//, '');
  return V1_FILES.get(path.endsWith('.js') ? path : `${path}.js`);
}

function v1Match(exports: unknown, target: SdkFileTarget, version: string | undefined, route: PatchRoute): ModuleMatch {
  return {
    exports,
    route,
    targets: target.targets,
    packageName: SDK_V1_PACKAGE,
    version,
    supported: SDK_V1_SUPPORTED,
    fileVersions: target.versions,
  };
}

function v2Match(exports: unknown, pkg: string, version: string | undefined, route: PatchRoute): ModuleMatch {
  return { exports, targets: SDK_V2_PACKAGES[pkg]!, packageName: pkg, version, supported: SDK_V2_SUPPORTED, route };
}

function stackMatch(exports: unknown, pkg: string, version: string | undefined, route: PatchRoute): ModuleMatch {
  const { targets, supported } = STACK_PACKAGES[pkg]!;
  return { exports, targets, packageName: pkg, version, supported, route };
}

/**
 * InstrumentationBase's hooks: the 1.x files (every version accepted here, checked by the patcher), 2.x mains, and
 * the mains of the stacks with their own transports (STACK_PACKAGES).
 */
export function sdkModuleDefinitions(onMatch: OnMatch, onUnmatch: OnUnmatch): InstrumentationNodeModuleDefinition[] {
  const v1Files = SDK_V1_FILES.flatMap(target =>
    (['esm', 'cjs'] as const).map(
      flavor =>
        new InstrumentationNodeModuleFile(
          `${SDK_V1_PACKAGE}/dist/${flavor}/${target.file}`,
          ['*'],
          (exports: unknown, version?: string) => {
            onMatch(v1Match(exports, target, version, 'otel_hook'));
            return exports;
          },
          (exports: unknown) => onUnmatch(exports, target.targets),
        ),
    ),
  );
  return [
    new InstrumentationNodeModuleDefinition(SDK_V1_PACKAGE, ['*'], undefined, undefined, v1Files),
    ...Object.keys(SDK_V2_PACKAGES).map(pkg => mainDefinition(pkg, v2Match, SDK_V2_PACKAGES[pkg]!, onMatch, onUnmatch)),
    ...Object.keys(STACK_PACKAGES).map(pkg =>
      mainDefinition(pkg, stackMatch, STACK_PACKAGES[pkg]!.targets, onMatch, onUnmatch),
    ),
  ];
}

/** The hook of a package's main module, every version accepted here (the patcher checks the range). */
function mainDefinition(
  pkg: string,
  match: (exports: unknown, pkg: string, version: string | undefined, route: PatchRoute) => ModuleMatch,
  targets: readonly PatchTarget[],
  onMatch: OnMatch,
  onUnmatch: OnUnmatch,
): InstrumentationNodeModuleDefinition {
  return new InstrumentationNodeModuleDefinition(
    pkg,
    ['*'],
    (exports: unknown, version?: string) => {
      onMatch(match(exports, pkg, version, 'otel_hook'));
      return exports;
    },
    (exports: unknown) => onUnmatch(exports, targets),
  );
}

interface Unhook {
  unhook(): void;
}

/** One private route: how it starts, and what is said when it cannot. */
interface Route {
  start(onMatch: OnMatch, diag: DiagLogger): Unhook | undefined;
  cannotStart(diag: DiagLogger, error: unknown): void;
}

/** In this order: an SDK already in require.cache is patched after the CommonJS hook is in place. */
const ROUTES: readonly Route[] = [
  {
    start: hookCommonJsFiles,
    cannotStart: (diag, error) => diag.error('could not install the CommonJS hook; use manuallyInstrument()', error),
  },
  { start: scanRequireCache, cannotStart: (diag, error) => diag.error('could not scan require.cache', error) },
  {
    start: hookEsmDependents,
    cannotStart: (diag, error) => diag.error('could not install the CommonJS hook for ESM-only dependents', error),
  },
  {
    start: hookEsmFiles,
    cannotStart: (diag, error) =>
      diag.debug('no import-in-the-middle beside @opentelemetry/instrumentation: ESM files hooked by it alone', error),
  },
];

/** Starts the private routes (see the header); each one that cannot start says so and the others still run. */
export function startModuleDiscovery(onMatch: OnMatch, diag: DiagLogger): ModuleDiscovery {
  const hooks: (Unhook | undefined)[] = [];
  for (const route of ROUTES) {
    try {
      hooks.push(route.start(onMatch, diag));
    } catch (error) {
      route.cannotStart(diag, error);
    }
  }
  return {
    stop() {
      for (const hook of hooks) hook?.unhook();
    },
  };
}

function hookCommonJsFiles(onMatch: OnMatch): Unhook {
  // require-in-the-middle matches internal files by their path without the `.js` extension.
  const names = SDK_V1_FILES.map(target => `${SDK_V1_PACKAGE}/dist/cjs/${target.file.replace(/\.js$/, '')}`);
  return new RequireHook(names, { internals: true }, (exports, name, basedir) => {
    const target = v1FileOf(slashes(name).slice(SDK_V1_PACKAGE.length + 1));
    if (target) onMatch(v1Match(exports, target, readPackageVersion(basedir), 'cjs_hook'));
    return exports;
  });
}

function hookEsmFiles(onMatch: OnMatch): Unhook {
  const fromInstrumentation = createRequire(require.resolve('@opentelemetry/instrumentation'));
  const { Hook } = fromInstrumentation('import-in-the-middle') as ImportInTheMiddleModule;
  const stacks = Object.keys(STACK_PACKAGES);
  return new Hook([SDK_V1_PACKAGE, ...stacks], { internals: true }, (exports, name, basedir) => {
    const path = slashes(name);
    // A stack's main module imported by its file URL rather than by the package name: any of its files is handed
    // over, and only the one that exports a target class is patched.
    const stack = basedir ? stacks.find(pkg => path === pkg || path.startsWith(`${pkg}/`)) : undefined;
    if (stack) {
      onMatch(stackMatch(exports, stack, readPackageVersion(basedir), 'esm_hook'));
      return exports;
    }
    const target = path.startsWith(`${SDK_V1_PACKAGE}/dist/esm/`)
      ? v1FileOf(path.slice(SDK_V1_PACKAGE.length + 1))
      : undefined;
    if (target && basedir) onMatch(v1Match(exports, target, readPackageVersion(basedir), 'esm_hook'));
    return exports;
  });
}

function hookEsmDependents(onMatch: OnMatch, diag: DiagLogger): Unhook {
  return new RequireHook([...SDK_V2_ESM_DEPENDENTS], (exports, _name, basedir) => {
    for (const pkg of Object.keys(SDK_V2_PACKAGES)) {
      const entry = basedir ? findEsmEntry(basedir, pkg) : undefined;
      if (!entry) continue;
      try {
        // The very module instance the dependent imported: require(esm) shares the ESM module map.
        onMatch(v2Match(createRequire(entry.file)(entry.file), pkg, entry.version, 'esm_dependents'));
      } catch (error) {
        diag.debug(`${pkg} beside ${basedir}: not loadable with require(): ${String(error)}`);
      }
    }
    return exports;
  });
}

/** SDK modules loaded with require() before forkwatch. */
function scanRequireCache(onMatch: OnMatch): undefined {
  const cache = typeof require === 'function' ? require.cache : undefined;
  if (!cache) return undefined;
  for (const filename of Object.keys(cache)) {
    const normalized = slashes(filename);
    const marker = normalized.lastIndexOf('/node_modules/');
    if (marker === -1) continue;
    const modules = normalized.slice(0, marker + '/node_modules/'.length);
    const inModules = normalized.slice(modules.length);
    const exports = () => cache[filename]?.exports;
    if (inModules.startsWith(`${SDK_V1_PACKAGE}/dist/cjs/`)) {
      const target = v1FileOf(inModules.slice(SDK_V1_PACKAGE.length + 1));
      if (target)
        onMatch(v1Match(exports(), target, readPackageVersion(`${modules}${SDK_V1_PACKAGE}`), 'require_cache'));
      continue;
    }
    for (const pkg of Object.keys(SDK_V2_PACKAGES)) {
      if (inModules === `${pkg}/dist/index.cjs`)
        onMatch(v2Match(exports(), pkg, readPackageVersion(`${modules}${pkg}`), 'require_cache'));
    }
  }
  return undefined;
}

/**
 * The ESM entry (`exports['.'].import`) of `pkg` as Node resolves it from `fromDir`: the nearest node_modules up the
 * tree that holds it. Undefined when there is none.
 */
function findEsmEntry(fromDir: string, pkg: string): { file: string; version: string | undefined } | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const base = join(dir, 'node_modules', pkg);
    try {
      const manifest = JSON.parse(readFileSync(join(base, 'package.json'), 'utf8'));
      const root = manifest.exports?.['.'] ?? manifest.exports;
      const target = typeof root?.import === 'string' ? root.import : root?.import?.default;
      return typeof target === 'string' ? { file: join(base, target), version: manifest.version } : undefined;
    } catch {
      // not here: look further up
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function readPackageVersion(basedir: string | undefined): string | undefined {
  if (!basedir) return undefined;
  try {
    const version = JSON.parse(readFileSync(join(basedir, 'package.json'), 'utf8')).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}
