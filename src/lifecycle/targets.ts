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
import type { PrototypeLike, Wrap } from '../shared/internal-types';
import type { ForkwatchRuntime } from '../shared/runtime';

export type { Wrap };

export interface PatchTarget {
  /** Export name of the class in its module. */
  exportName: string;
  /** The patch, its module loaded on the first call. Called only for a class of this name that is there. */
  load(): ClassPatch;
}

export interface ClassPatch {
  /** Prototype methods that must exist; all are wrapped and unwrapped together. */
  methods: readonly string[];
  patch(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void;
  /**
   * Optional: why a class with this export name is deliberately left alone (a reason for a debug message), or
   * undefined to patch it. Used where one export name means different classes across versions.
   */
  skip?(proto: PrototypeLike | undefined): string | undefined;
  /**
   * Optional: a stand-in for the exported class that constructs the class itself and watches what it is constructed
   * with (state a class keeps in `#private` fields, out of reach of its prototype). The patcher puts it in the
   * module's exports once the prototype is patched, and the class back when it unpatches.
   */
  watchConstruction?<T extends object>(cls: T, runtime: ForkwatchRuntime): T;
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

const serverPatches = () =>
  require('../server/streamable-http-server') as typeof import('../server/streamable-http-server');

/**
 * The server transport that does the work from SDK 1.25 on, and in @modelcontextprotocol/server 2.x: Request in,
 * Response out. The Node classes of both (1.x `StreamableHTTPServerTransport` from 1.25, 2.x
 * `NodeStreamableHTTPServerTransport`) are wrappers that construct one of these, so they are covered by it.
 */
export const WEB_STANDARD_STREAMABLE_HTTP_SERVER = lazyTarget('WebStandardStreamableHTTPServerTransport', () => {
  const m = serverPatches();
  return { methods: m.WEB_STANDARD_SERVER_METHODS, patch: m.patchWebStandardStreamableHttpServer };
});

/** The Node server transport of SDK 1.x before 1.25: the full implementation, writing to a ServerResponse. */
export const NODE_STREAMABLE_HTTP_SERVER = lazyTarget('StreamableHTTPServerTransport', () => {
  const m = serverPatches();
  return {
    methods: m.NODE_SERVER_METHODS,
    patch: m.patchNodeStreamableHttpServer,
    // From 1.25 the class of that name is a wrapper: patching it too would count every resume twice.
    skip: m.describeNodeServerWrapper,
  };
});

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
  const patches = () => require('../server/per-request-patches') as typeof import('../server/per-request-patches');
  return [
    lazyTarget('PerRequestHTTPServerTransport', () => {
      const m = patches();
      return { methods: m.PER_REQUEST_TRANSPORT_METHODS, patch: m.patchPerRequestTransport };
    }),
    lazyTarget('Server', () => {
      const m = patches();
      return {
        methods: m.SERVER_HANDLER_METHODS,
        patch: m.patchServerHandlers,
        skip: proto => m.describeNonHookServer(proto as { _wrapHandler?: unknown } | undefined),
      };
    }),
    lazyTarget('McpServer', () => {
      const m = patches();
      return { methods: m.MCP_SERVER_METHODS, patch: m.patchMcpServerTools };
    }),
    lazyTarget('InMemoryServerEventBus', () => {
      const m = patches();
      return { methods: m.EVENT_BUS_METHODS, patch: m.patchEventBus };
    }),
  ];
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

/**
 * tmcp's HTTP transport (@tmcp/transport-http, ESM only): `respond(Request) → Response` serves every session of the
 * server. It has no event store: a resume is answered with a fresh stream, and so is a GET for any session id.
 */
export const TMCP_HTTP_TRANSPORT = lazyTarget('HttpTransport', () => {
  const m = require('../server/tmcp-http-transport') as typeof import('../server/tmcp-http-transport');
  return { methods: m.TMCP_HTTP_TRANSPORT_METHODS, patch: m.patchTmcpHttpTransport };
});

/**
 * @hono/mcp's own `StreamableHTTPTransport` (a port of the SDK's, Hono context in, Response out; its fields all
 * `#private`), one instance per session: the export name of the SDK 1.x Node class's sibling, in another package.
 */
export const HONO_STREAMABLE_HTTP_TRANSPORT = lazyTarget('StreamableHTTPTransport', () => {
  const m = require('../server/hono-streamable-http') as typeof import('../server/hono-streamable-http');
  return {
    methods: m.HONO_TRANSPORT_METHODS,
    patch: m.patchHonoStreamableHttp,
    watchConstruction: m.watchHonoConstruction,
  };
});

/** Stacks patched through their own transport classes, exported from the package's main module. */
export const STACK_PACKAGES: Record<string, StackPackage> = {
  '@tmcp/transport-http': { supported: '>=0.9.0 <0.10.0', targets: [TMCP_HTTP_TRANSPORT] },
  '@hono/mcp': { supported: '>=0.3.0 <0.4.0', targets: [HONO_STREAMABLE_HTTP_TRANSPORT] },
};

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
