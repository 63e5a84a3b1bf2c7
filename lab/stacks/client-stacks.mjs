/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The MCP client stacks of the stacks lab, each connected the way its own documentation does it, from its pinned app
// folder (test/sdk-versions/<folder>): the stack builds the SDK Client and its StreamableHTTPClientTransport, with
// its own reconnection options, and delivers the server's log notifications through its own hook where it has one.
// Each connect returns the SDK Client the stack made (the lab's scenario calls the `emit` tool through it), the
// transport (to tell whether forkwatch patched its class) and a close.
//
// The SDK's defaults when a stack sets none: the GET stream is reconnected after 1 s, with the last event id seen.

/** @type {Record<string, { folder: string, connect: (load, options) => Promise<object> }>} */
export const CLIENT_STACKS = {
  // LangChain's MultiServerMCPClient on @modelcontextprotocol/sdk 1.x; `reconnect` sets the transport's options.
  'langchain-mcp-adapters': {
    folder: 'langchain-mcp-adapters',
    async connect(load, { url, onLog }) {
      const { MultiServerMCPClient } = await load('@langchain/mcp-adapters');
      const stack = new MultiServerMCPClient({
        mcpServers: {
          lab: { transport: 'http', url, reconnect: { enabled: true, delayMs: 300, maxAttempts: 2 } },
        },
        useStandardContentBlocks: true,
        onMessage: params => onLog(params.data),
      });
      const client = await stack.getClient('lab');
      return { client, transport: client.transport, close: () => stack.close() };
    },
  },
  // The OpenAI Agents SDK's MCPServerStreamableHttp, whose Node shim runs @modelcontextprotocol/client 2.x.
  'openai-agents': {
    folder: 'openai-agents',
    async connect(load, { url, onLog }) {
      const { MCPServerStreamableHttp } = await load('@openai/agents');
      const stack = new MCPServerStreamableHttp({
        url,
        name: 'lab',
        reconnectionOptions: {
          initialReconnectionDelay: 300,
          maxReconnectionDelay: 600,
          reconnectionDelayGrowFactor: 1,
          maxRetries: 2,
        },
      });
      await stack.connect();
      const { session: client, transport } = stack.underlying;
      // The stack has no hook for server logs: the app listens on the Client it made.
      client.setNotificationHandler('notifications/message', n => onLog(n.params.data));
      return { client, transport, close: () => stack.close() };
    },
  },
  // Mastra's MCPClient on @modelcontextprotocol/client 2.x; server logs reach the server's `logger`.
  'mastra-mcp': {
    folder: 'mastra-mcp',
    async connect(load, { url, onLog }) {
      const { MCPClient } = await load('@mastra/mcp');
      const stack = new MCPClient({
        id: `lab-${process.pid}`,
        servers: { lab: { url: new URL(url), logger: entry => entry.details?.data && onLog(entry.details.data) } },
      });
      const internal = await stack.getConnectedClientForServer('lab');
      return { client: internal.client, transport: internal.transport, close: () => stack.disconnect() };
    },
  },
};
