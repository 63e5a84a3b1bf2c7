/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The MCP SDK's session transports (protocols up to 2025-11-25): @modelcontextprotocol/sdk 1.x and
 * @modelcontextprotocol/server 2.x, and the stacks that serve through them (fastmcp, mcp-proxy, mcp-handler,
 * @vercel/mcp-adapter). One class does the work from SDK 1.25 on and in 2.x, the web-standard one; the Node class of
 * 1.24 and earlier is the full implementation, read in its own flavour (flavors.ts). Both get one patch (patch.ts),
 * whose wrappers hand facts to one session observer per transport (session-observer.ts); the event store is watched
 * through a recording wrapper (recording-event-store.ts).
 */
import type { ServerStack } from '../../stack';
import {
  NODE_SERVER_METHODS,
  WEB_STANDARD_SERVER_METHODS,
  describeNodeServerWrapper,
  patchNodeStreamableHttpServer,
  patchWebStandardStreamableHttpServer,
} from './patch';

export const stack: ServerStack = {
  patches: {
    WebStandardStreamableHTTPServerTransport: {
      methods: WEB_STANDARD_SERVER_METHODS,
      patch: patchWebStandardStreamableHttpServer,
    },
    StreamableHTTPServerTransport: {
      methods: NODE_SERVER_METHODS,
      patch: patchNodeStreamableHttpServer,
      // From 1.25 the class of that name is a wrapper: patching it too would count every resume twice.
      skip: describeNodeServerWrapper,
    },
  },
};
