/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The revived-session and reconnect-storm lab in one process: the real SDK clients (1.x and 2.4) and servers (1.x and
 * 2.x web-standard transports) on 127.0.0.1, all patched by one ForkwatchInstrumentation on private providers.
 */
import { afterEach } from 'vitest';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { requireFrom } from '../server/support';
import type { ForkwatchInstrumentationConfig } from '../../src/shared/types';

const req = requireFrom();

/** What the lab drives of a line's StreamableHTTPClientTransport: the same in 1.x and 2.x. */
export interface LabTransport {
  readonly sessionId: string | undefined;
  terminateSession(): Promise<void>;
}

/** What the lab drives of a line's Client: the same calls in 1.x and 2.x (the lab's tools answer with text first). */
export interface LabClient {
  onerror?: (error: Error) => void;
  connect(transport: LabTransport): Promise<void>;
  listTools(): Promise<unknown>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<{
    content: [{ type: string; text: string }, ...unknown[]];
  }>;
  close(): Promise<void>;
}

export interface ClientLine {
  label: string;
  module: object;
  Client: new (info: object, options?: object) => LabClient;
  Transport: new (url: URL, options?: object) => LabTransport;
}

export interface ServerLine {
  label: string;
  module: object;
  sdk: { McpServer: unknown; WebStandardStreamableHTTPServerTransport: unknown };
}

const v1Client = req('@modelcontextprotocol/sdk/client/streamableHttp.js');
const v2Client = req('@modelcontextprotocol/client');
export const CLIENTS: ClientLine[] = [
  {
    label: 'client @modelcontextprotocol/sdk 1.32.2',
    module: v1Client,
    Client: req('@modelcontextprotocol/sdk/client/index.js').Client,
    Transport: v1Client.StreamableHTTPClientTransport,
  },
  {
    label: 'client @modelcontextprotocol/client 2.4',
    module: v2Client,
    Client: v2Client.Client,
    Transport: v2Client.StreamableHTTPClientTransport,
  },
];

const v1Server = req('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
const v2Server = req('@modelcontextprotocol/server');
export const SERVERS: ServerLine[] = [
  {
    label: 'server @modelcontextprotocol/sdk 1.32.2',
    module: v1Server,
    sdk: {
      McpServer: req('@modelcontextprotocol/sdk/server/mcp.js').McpServer,
      WebStandardStreamableHTTPServerTransport: v1Server.WebStandardStreamableHTTPServerTransport,
    },
  },
  {
    label: 'server @modelcontextprotocol/server 2.x',
    module: v2Server,
    sdk: {
      McpServer: v2Server.McpServer,
      WebStandardStreamableHTTPServerTransport: v2Server.WebStandardStreamableHTTPServerTransport,
    },
  },
];

/** The clients and servers of every line, both patched. */
export function setupLab(config: ForkwatchInstrumentationConfig = {}): Forkwatch {
  return setupForkwatch(config, [...CLIENTS.map(c => c.module), ...SERVERS.map(s => s.module)]);
}

/** Fast reconnects (the SDK's own delays scaled down ten times), with its default of 2 retries. */
export const FAST_RECONNECT = {
  initialReconnectionDelay: 100,
  maxReconnectionDelay: 300,
  reconnectionDelayGrowFactor: 1.5,
  maxRetries: 2,
};

export async function connect(line: ClientLine, url: string, reconnectionOptions = FAST_RECONNECT) {
  const transport = new line.Transport(new URL(url), { reconnectionOptions });
  const client = new line.Client({ name: 'revived-lab-client', version: '1.0.0' });
  const errors: unknown[] = [];
  client.onerror = (error: unknown) => errors.push(error);
  await client.connect(transport);
  return { client, transport, errors };
}

/**
 * A test file's lab: `start` sets up forkwatch, starts a lab server and connects a client session to it; all of it
 * is torn down after each test (this registers the afterEach). `forkwatch()` is the current test's instance.
 */
// biome-ignore lint/suspicious/noExplicitAny: the lab servers are plain ESM modules (lab/revived/servers.mjs)
export function labScenarios(startServer: (options: object) => Promise<any>) {
  let fw: Forkwatch | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
    await fw?.teardown();
    fw = undefined;
  });
  return {
    forkwatch: () => fw!,
    async start(server: ServerLine, client: ClientLine, options: object) {
      fw = setupLab();
      const lab = await startServer({ sdk: server.sdk, ...options });
      cleanups.push(() => lab.close());
      const session = await connect(client, lab.url);
      cleanups.push(() => session.client.close());
      return { lab, session };
    },
  };
}

export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/** Waits until `check` holds, polling; throws with `what` after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
