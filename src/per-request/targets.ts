/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The 2.x classes of the per-request path (protocol 2026-07-28) and their patches, for the targets table. */
import type { PrototypeLike, Wrap } from '../shared/internal-types';
import type { ForkwatchRuntime } from '../shared/runtime';
import {
  EVENT_BUS_METHODS,
  MCP_SERVER_METHODS,
  PER_REQUEST_TRANSPORT_METHODS,
  SERVER_HANDLER_METHODS,
  describeNonHookServer,
  patchEventBus,
  patchMcpServerTools,
  patchPerRequestTransport,
  patchServerHandlers,
} from './server-patches';

interface Target {
  exportName: string;
  methods: readonly string[];
  patch(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void;
  skip?(proto: PrototypeLike | undefined): string | undefined;
}

/** @modelcontextprotocol/server 2.x, exported from the package root. */
export const PER_REQUEST_SERVER_TARGETS: Target[] = [
  {
    exportName: 'PerRequestHTTPServerTransport',
    methods: PER_REQUEST_TRANSPORT_METHODS,
    patch: patchPerRequestTransport,
  },
  {
    exportName: 'Server',
    methods: SERVER_HANDLER_METHODS,
    patch: patchServerHandlers,
    skip: proto => describeNonHookServer(proto as { _wrapHandler?: unknown } | undefined),
  },
  { exportName: 'McpServer', methods: MCP_SERVER_METHODS, patch: patchMcpServerTools },
  { exportName: 'InMemoryServerEventBus', methods: EVENT_BUS_METHODS, patch: patchEventBus },
];
