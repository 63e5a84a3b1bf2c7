/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @modelcontextprotocol/server 2.x on protocol 2026-07-28: no sessions and no resumes, so none of the session facts
 * of server/stack.ts; its patches (patch.ts) hand what they see to one per-request observer (observer.ts), which
 * judges each exchange with core/per-request.ts. Loaded only where a 2.x class of this path is found.
 */
import type { ServerStack } from '../../stack';
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
} from './patch';

export const stack: ServerStack = {
  patches: {
    PerRequestHTTPServerTransport: { methods: PER_REQUEST_TRANSPORT_METHODS, patch: patchPerRequestTransport },
    Server: {
      methods: SERVER_HANDLER_METHODS,
      patch: patchServerHandlers,
      skip: proto => describeNonHookServer(proto as { _wrapHandler?: unknown } | undefined),
    },
    McpServer: { methods: MCP_SERVER_METHODS, patch: patchMcpServerTools },
    InMemoryServerEventBus: { methods: EVENT_BUS_METHODS, patch: patchEventBus },
  },
};
