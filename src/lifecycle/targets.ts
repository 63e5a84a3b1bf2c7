/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The classes forkwatch patches, where they live in each package, and which versions are supported.
 * The instrumentation hooks (module definitions, the CommonJS hook, the manual API) all work from this table.
 *
 * Each patch is loaded the first time a class of its name is found: a server process never loads the client's
 * patches, nor a 1.x process the per-request ones. Their code would only grow the host's heap, which its garbage
 * collector then marks on every major collection (docs/benchmark.md).
 */
import type { ClassPatch } from '../shared/class-patch';
import type { Wrap } from '../shared/internal-types';
import type { ServerStack } from '../server/stack';
import { STACK_CLASSES, type StackPackageName } from '../shared/names';

export type { ClassPatch, Wrap };

export interface PatchTarget {
  /** Export name of the class in its module. */
  exportName: string;
  /** The patch, its module loaded on the first call. Called only for a class of this name that is there. */
  load(): ClassPatch;
}

/** A target whose patch `load` returns, loaded once, on first use. */
function lazyTarget(exportName: string, load: () => ClassPatch): PatchTarget {
  let loaded: ClassPatch | undefined;
  return { exportName, load: () => (loaded ??= load()) };
}

export const STREAMABLE_HTTP_CLIENT = lazyTarget('StreamableHTTPClientTransport', () => {
  const m =
    require('../client/patches/streamable-http-client') as typeof import('../client/patches/streamable-http-client');
  return { methods: m.STREAMABLE_HTTP_CLIENT_METHODS, patch: m.patchStreamableHttpClient };
});

/** The legacy HTTP+SSE client transport (protocol 2024-11-05). */
export const SSE_CLIENT = lazyTarget('SSEClientTransport', () => {
  const m = require('../client/patches/sse-client') as typeof import('../client/patches/sse-client');
  return { methods: m.SSE_CLIENT_METHODS, patch: m.patchSseClient };
});

/** A server stack's folder (src/server/stacks/<name>/, its index.ts), loaded the first time one of its classes is found. */
type StackFolder = () => { stack: ServerStack };

/** The target of one class of a server stack: the stack folder's patch of that export name. */
function stackTarget(folder: StackFolder, exportName: string): PatchTarget {
  return lazyTarget(exportName, () => {
    const patch = folder().stack.patches[exportName];
    if (!patch) throw new Error(`forkwatch: no patch for ${exportName} in its stack folder`);
    return patch;
  });
}

/** The MCP SDK's session transports, 1.x and 2.x (src/server/stacks/sdk). */
const SDK_STACK: StackFolder = () => require('../server/stacks/sdk') as typeof import('../server/stacks/sdk');

/**
 * The server transport that does the work from SDK 1.25 on, and in @modelcontextprotocol/server 2.x: Request in,
 * Response out. The Node classes of both (1.x `StreamableHTTPServerTransport` from 1.25, 2.x
 * `NodeStreamableHTTPServerTransport`) are wrappers that construct one of these, so they are covered by it.
 */
export const WEB_STANDARD_STREAMABLE_HTTP_SERVER = stackTarget(SDK_STACK, 'WebStandardStreamableHTTPServerTransport');

/** The Node server transport of SDK 1.x before 1.25: the full implementation, writing to a ServerResponse. */
export const NODE_STREAMABLE_HTTP_SERVER = stackTarget(SDK_STACK, 'StreamableHTTPServerTransport');

export interface SdkFileTarget {
  /** Path inside `dist/cjs` and `dist/esm` of @modelcontextprotocol/sdk. */
  file: string;
  targets: PatchTarget[];
  /** Versions in which this file holds these targets, when narrower than SDK_V1_SUPPORTED (quietly skipped outside). */
  versions?: string;
}

/** @modelcontextprotocol/sdk 1.x: dual build, one file per transport. */
export const SDK_V1_PACKAGE = '@modelcontextprotocol/sdk';
export const SDK_V1_SUPPORTED = '>=1.17.0 <2';
export const SDK_V1_FILES: SdkFileTarget[] = [
  { file: 'client/streamableHttp.js', targets: [STREAMABLE_HTTP_CLIENT] },
  { file: 'client/sse.js', targets: [SSE_CLIENT] },
  { file: 'server/streamableHttp.js', targets: [NODE_STREAMABLE_HTTP_SERVER], versions: '>=1.17.0 <1.25.0' },
  {
    file: 'server/webStandardStreamableHttp.js',
    targets: [WEB_STANDARD_STREAMABLE_HTTP_SERVER],
    versions: '>=1.25.0 <2',
  },
];

/** @modelcontextprotocol/client and /server 2.x: bundled, classes exported from the package root. */
export const SDK_V2_SUPPORTED = '>=2.0.0 <3';
export const SDK_V2_PACKAGES: Record<string, PatchTarget[]> = {
  '@modelcontextprotocol/client': [STREAMABLE_HTTP_CLIENT, SSE_CLIENT],
  '@modelcontextprotocol/server': [WEB_STANDARD_STREAMABLE_HTTP_SERVER, ...perRequestServerTargets()],
};

/** The 2.x classes of the per-request path (protocol 2026-07-28), exported from the package root. */
function perRequestServerTargets(): PatchTarget[] {
  const folder: StackFolder = () =>
    require('../server/stacks/sdk-per-request') as typeof import('../server/stacks/sdk-per-request');
  return ['PerRequestHTTPServerTransport', 'Server', 'McpServer', 'InMemoryServerEventBus'].map(name =>
    stackTarget(folder, name),
  );
}

/**
 * ESM-only packages that import the 2.x packages above. A CommonJS app loads them with require() (require(esm), Node
 * >= 20.19), and ESM loaded that way never passes the ESM loader hooks: the 2.x copy they import is patched when
 * they are required instead (fastmcp's CommonJS build requires mcp-proxy this way).
 */
export const SDK_V2_ESM_DEPENDENTS: readonly string[] = ['mcp-proxy'];

/** A stack with a server transport of its own (no MCP SDK class serves its HTTP): the versions tested, its classes. */
export interface StackPackage {
  supported: string;
  targets: PatchTarget[];
}

/** A row of STACK_PACKAGES: the versions tested and the stack's folder; its classes are its names' (shared/names.ts). */
function stackPackage(pkg: StackPackageName, supported: string, folder: StackFolder): [string, StackPackage] {
  return [pkg, { supported, targets: STACK_CLASSES[pkg].map(name => stackTarget(folder, name)) }];
}

/**
 * Stacks patched through their own transport classes, exported from the package's main module: one row each. Adding a
 * stack is a folder under src/server/stacks/, a row here, and the names it is reported under in shared/names.ts
 * (STACK_CLASSES, which these rows take their classes from): docs/architecture.md.
 *
 * - tmcp's HTTP transport (@tmcp/transport-http, ESM only): `respond(Request) → Response` serves every session of
 *   the server. It has no event store: a resume is answered with a fresh stream, and so is a GET for any session id.
 * - @hono/mcp's own `StreamableHTTPTransport` (a port of the SDK's, Hono context in, Response out; its fields all
 *   `#private`), one instance per session: the export name of the SDK 1.x Node class's sibling, in another package.
 */
export const STACK_PACKAGES: Record<string, StackPackage> = Object.fromEntries([
  stackPackage(
    '@tmcp/transport-http',
    '>=0.9.0 <0.10.0',
    () => require('../server/stacks/tmcp') as typeof import('../server/stacks/tmcp'),
  ),
  stackPackage(
    '@hono/mcp',
    '>=0.3.0 <0.4.0',
    () => require('../server/stacks/hono') as typeof import('../server/stacks/hono'),
  ),
]);

/** Every target, for the manual API, which matches classes by export name. */
export const ALL_TARGETS: PatchTarget[] = [
  ...new Set([
    ...SDK_V1_FILES.flatMap(f => f.targets),
    ...Object.values(SDK_V2_PACKAGES).flat(),
    ...Object.values(STACK_PACKAGES).flatMap(p => p.targets),
  ]),
];

/** Minimal semver range check for the `>=a.b.c <d` ranges above; prerelease tags are compared as release. */
export function versionSatisfies(version: string | undefined, range: string): boolean {
  if (!version) return false;
  const parse = (v: string) =>
    v
      .replace(/^[^\d]*/, '')
      .split(/[.+-]/)
      .slice(0, 3)
      .map(n => Number(n) || 0);
  const cmp = (a: number[], b: number[]) => {
    for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
    return 0;
  };
  const v = parse(version);
  return range.split(/\s+/).every(part => {
    const m = /^(>=|<=|>|<|=)?(.+)$/.exec(part);
    if (!m) return false;
    const c = cmp(v, parse(m[2]!));
    switch (m[1]) {
      case '>=':
        return c >= 0;
      case '<=':
        return c <= 0;
      case '>':
        return c > 0;
      case '<':
        return c < 0;
      default:
        return c === 0;
    }
  });
}
