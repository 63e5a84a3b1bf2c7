/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The per-request lab (protocol 2026-07-28) in process: real @modelcontextprotocol/server 2.x `createMcpHandler`
 * replicas served over real HTTP by @modelcontextprotocol/node on 127.0.0.1, a real TCP cutter in front of them
 * (a dropped connection, as a proxy or a network cut makes it), the real 2.x client, and ground truth kept by the
 * tools themselves (executions, completions after the client left, tasks created).
 */
import { type Server as HttpServer, createServer } from 'node:http';
import {
  type AddressInfo,
  type Server as NetServer,
  type Socket,
  connect,
  createServer as createNetServer,
} from 'node:net';
import type {
  CallToolRequestOptions,
  CallToolResult,
  Client,
  ContentBlock,
  TextContent,
} from '@modelcontextprotocol/client';
import { afterEach, expect } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, requireFrom, setupForkwatch } from '../server/support';
import { sampleOne } from '../support/scrape';

const req = requireFrom();
export const serverSdk = req('@modelcontextprotocol/server');
export const clientSdk = req('@modelcontextprotocol/client');
const nodeSdk = req('@modelcontextprotocol/node');
const { z } = req('zod');

export const MODERN = '2026-07-28';

/** What a tool handler receives of the request context (the parts the lab's tools use). */
interface ToolCtx {
  mcpReq: { signal: AbortSignal; requestState(): unknown; notify(notification: object): Promise<void> };
}

/** What the tools of one replica did: the ground truth the signals are checked against. */
export interface Truth {
  executions: Record<string, number>;
  /** Handlers that ran to completion after their request's signal was aborted (the client had left). */
  completedAfterAbort: number;
  /** Handlers that stopped on the abort signal. */
  honouredCancel: number;
  tasksCreated: string[];
  /** Notifications a handler tried to send after its exchange closed (the SDK threw "Not connected" to it). */
  notifyFailed: number;
  /** Side effects `commit_then_check` committed, by key (it commits first, then honours the cancellation). */
  commits: Record<string, number>;
}

export interface Replica {
  url: string;
  truth: Truth;
  handler: { notify: { toolsChanged(): void }; bus: unknown; close(): Promise<void> };
  /** Deletes every task, as a TTL expiry does. */
  expireTasks(): void;
  close(): Promise<void>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** One replica: a createMcpHandler endpoint whose factory builds a fresh McpServer per request. */
export async function startReplica(
  options: { legacy?: 'reject' | 'stateless'; responseMode?: 'sse' | 'json' } = {},
): Promise<Replica> {
  const lab = createLabHandler(options);
  const node = nodeSdk.toNodeHandler(lab.handler);
  const http: HttpServer = createServer((request, response) => void node(request, response));
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    ...lab,
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await lab.handler.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>(resolve => http.close(() => resolve()));
    },
  };
}

/** The lab's createMcpHandler with its tools and ground truth, and its Node request listener. */
export function createLabHandler(options: { legacy?: 'reject' | 'stateless'; responseMode?: 'sse' | 'json' } = {}) {
  const truth: Truth = {
    executions: {},
    completedAfterAbort: 0,
    honouredCancel: 0,
    tasksCreated: [],
    notifyFailed: 0,
    commits: {},
  };
  const tasks = new Map<string, { status: string }>();
  let taskCounter = 0;
  const ran = (name: string) => {
    truth.executions[name] = (truth.executions[name] ?? 0) + 1;
  };
  const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
  const factory = () => {
    const server = new serverSdk.McpServer(
      { name: 'per-request-lab', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    // Ignores the abort signal: finishes its write whatever happens to the exchange.
    server.registerTool(
      'write_record',
      { inputSchema: z.object({ ms: z.number(), key: z.string() }), annotations: { idempotentHint: false } },
      async ({ ms, key }: { ms: number; key: string }, ctx: ToolCtx) => {
        ran('write_record');
        await sleep(ms);
        if (ctx.mcpReq.signal.aborted) truth.completedAfterAbort++;
        return text(`wrote ${key}`);
      },
    );
    // Idempotent, also ignores the signal.
    server.registerTool(
      'read_record',
      { inputSchema: z.object({ ms: z.number(), key: z.string() }), annotations: { idempotentHint: true } },
      async ({ ms, key }: { ms: number; key: string }, ctx: ToolCtx) => {
        ran('read_record');
        await sleep(ms);
        if (ctx.mcpReq.signal.aborted) truth.completedAfterAbort++;
        return text(`read ${key}`);
      },
    );
    // Honours cancellation: stops on the abort signal.
    server.registerTool(
      'cooperative_job',
      { inputSchema: z.object({ ms: z.number() }) },
      async ({ ms }: { ms: number }, ctx: ToolCtx) => {
        ran('cooperative_job');
        try {
          await sleep(ms, ctx.mcpReq.signal);
        } catch (error) {
          truth.honouredCancel++;
          throw error;
        }
        return text('done');
      },
    );
    // Commits its side effect at once, then honours the cancellation while it finishes up (issue 40): a handler
    // that stopped on the abort signal may still have run its write.
    server.registerTool(
      'commit_then_check',
      { inputSchema: z.object({ ms: z.number(), key: z.string() }) },
      async ({ ms, key }: { ms: number; key: string }, ctx: ToolCtx) => {
        ran('commit_then_check');
        truth.commits[key] = (truth.commits[key] ?? 0) + 1;
        try {
          await sleep(ms, ctx.mcpReq.signal);
        } catch (error) {
          truth.honouredCancel++;
          throw error;
        }
        return text(`committed ${key}`);
      },
    );
    // MRTR: asks for a confirmation round (requestState only), completes on the retry.
    server.registerTool(
      'confirm_action',
      { inputSchema: z.object({ key: z.string() }) },
      async ({ key }: { key: string }, ctx: ToolCtx) => {
        ran('confirm_action');
        if (ctx.mcpReq.requestState() === undefined) return serverSdk.inputRequired({ requestState: `confirm:${key}` });
        return text(`confirmed ${key}`);
      },
    );
    // A task (SEP-2663 shape, app-level: the SDK has no task runtime): created, then returned after `ms`.
    server.registerTool(
      'start_task',
      { inputSchema: z.object({ ms: z.number() }) },
      async ({ ms }: { ms: number }, ctx: ToolCtx) => {
        ran('start_task');
        const taskId = `task-${++taskCounter}`;
        tasks.set(taskId, { status: 'working' });
        truth.tasksCreated.push(taskId);
        await sleep(ms);
        if (ctx.mcpReq.signal.aborted) truth.completedAfterAbort++;
        return { ...text(`task ${taskId}`), task: { taskId, status: 'working', ttlMs: 60_000 } };
      },
    );
    // Reports back after its work, ignoring the signal: the notification comes after the client left.
    server.registerTool(
      'report_back',
      { inputSchema: z.object({ ms: z.number() }) },
      async ({ ms }: { ms: number }, ctx: ToolCtx) => {
        ran('report_back');
        await sleep(ms);
        try {
          await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data: 'done' } });
        } catch (error) {
          if (/not connected/i.test(String(error))) truth.notifyFailed++;
        }
        return text('reported');
      },
    );
    // tasks/get (SEP-2663 wire shape) on this replica's task table; -32602 when the task is not here.
    server.server.setRequestHandler(
      'tasks/get',
      { params: z.object({ taskId: z.string() }).passthrough(), result: z.object({}).passthrough() },
      async ({ taskId }: { taskId: string }) => {
        const task = tasks.get(taskId);
        if (!task) throw new serverSdk.ProtocolError(-32602, `Task not found: ${taskId}`);
        return { taskId, status: task.status, ttlMs: 60_000, createdAt: new Date().toISOString() };
      },
    );
    return server;
  };
  const handler = serverSdk.createMcpHandler(factory, {
    legacy: options.legacy ?? 'reject',
    ...(options.responseMode ? { responseMode: options.responseMode } : {}),
  });
  return {
    truth,
    handler,
    expireTasks: () => tasks.clear(),
    listener: nodeSdk.toNodeHandler(handler) as (req: unknown, res: unknown) => Promise<void>,
  };
}

/** A TCP cutter in front of an upstream: `cut()` destroys every connection in flight, both sides. */
export interface Cutter {
  url: string;
  cut(): void;
  close(): Promise<void>;
}

/**
 * `upstreamCloseDelayMs`: on a cut, the client's side closes at once and the upstream's only after this delay (a
 * proxy that tells the server late): the client can re-issue before the server hears of the break.
 */
export async function startCutter(
  upstreamUrl: string,
  { upstreamCloseDelayMs = 0 }: { upstreamCloseDelayMs?: number } = {},
): Promise<Cutter> {
  const upstream = new URL(upstreamUrl);
  const pairs = new Set<[Socket, Socket]>();
  const late = new Map<ReturnType<typeof setTimeout>, Socket>();
  /** The upstream's side of a pair whose client side closed: at once, or after the delay. */
  const closeUpstream = (target: Socket) => {
    if (upstreamCloseDelayMs === 0) {
      target.destroy();
      return;
    }
    const timer = setTimeout(() => {
      late.delete(timer);
      target.destroy();
    }, upstreamCloseDelayMs);
    late.set(timer, target);
  };
  const server: NetServer = createNetServer(client => {
    const target = connect(Number(upstream.port), upstream.hostname);
    const pair: [Socket, Socket] = [client, target];
    pairs.add(pair);
    client.pipe(target);
    target.pipe(client);
    const clientGone = () => {
      if (!pairs.delete(pair)) return;
      client.unpipe(target);
      target.unpipe(client);
      client.destroy();
      closeUpstream(target);
    };
    const upstreamGone = () => {
      pairs.delete(pair);
      client.destroy();
      target.destroy();
    };
    client.on('error', clientGone).on('close', clientGone);
    target.on('error', upstreamGone).on('close', upstreamGone);
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    for (const [a, b] of [...pairs]) {
      a.unpipe(b);
      b.unpipe(a);
      a.destroy();
      closeUpstream(b);
    }
    pairs.clear();
  };
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    cut,
    async close() {
      cut();
      for (const [timer, socket] of late) {
        clearTimeout(timer);
        socket.destroy();
      }
      late.clear();
      await new Promise<void>(resolve => server.close(() => resolve()));
    },
  };
}

/**
 * The real 2.x client as these tests drive it. Every lab tool answers with a text block first, so a tool result's
 * `content[0].text` is typed as the tests read it; `arguments` is any object, as the tests hand it on.
 */
export type LabClient = Omit<Client, 'callTool'> & {
  callTool(
    params: { name: string; arguments?: object },
    options?: CallToolRequestOptions,
  ): Promise<Omit<CallToolResult, 'content'> & { content: [TextContent, ...ContentBlock[]] }>;
};

/** The real 2.x client, pinned to 2026-07-28; `transport` goes to its StreamableHTTPClientTransport (e.g. `fetch`). */
export async function connectClient(url: string, transport: object = {}): Promise<LabClient> {
  const client = new clientSdk.Client(
    { name: 'per-request-lab-client', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(new clientSdk.StreamableHTTPClientTransport(new URL(url), transport));
  return client;
}

/** Waits until `check` holds (polling), or throws after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise(resolve => setTimeout(resolve, 10));
  }
}

export { sleep };

/** A raw 2026-07-28 POST (the wire form the 2.x client sends), for methods the client has no call for. */
export async function rawRequest(
  url: string,
  id: number,
  method: string,
  params: Record<string, unknown>,
  name?: string,
) {
  const headers: Record<string, string> = {
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
    'mcp-method': method,
    'mcp-protocol-version': MODERN,
    ...(name ? { 'mcp-name': name } : {}),
  };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

/**
 * What a test of the file starts (`cleanups`, stopped after it in reverse order) and its forkwatch (`fw`, torn down
 * last), for the per-request test files.
 */
export function useTestResources(): { fw: Forkwatch | undefined; cleanups: (() => Promise<unknown> | unknown)[] } {
  const resources = { fw: undefined as Forkwatch | undefined, cleanups: [] as (() => Promise<unknown> | unknown)[] };
  afterEach(async () => {
    for (const cleanup of resources.cleanups.splice(0).reverse()) await cleanup();
    await resources.fw?.teardown();
    resources.fw = undefined;
  });
  return resources;
}

/**
 * One real per-request run of the traffic both 2026-07-28 client histograms record, for the checks that read what
 * forkwatch really exports (test/metrics-contract.test.ts, test/alerts/rules-lint.test.ts) instead of declaring it from
 * names.ts: a call cut mid-flight and re-issued (forkwatch_client_reissue_delay_seconds), and a listen stream dropped
 * and opened again (forkwatch_client_listen_gap_seconds). It waits for the traffic, not for the histograms (the
 * callers check those); returns the run's Prometheus text and stops all it started.
 */
export async function perRequestScrape(): Promise<string> {
  const fw = setupForkwatch({ perRequest: { reissueWindowMs: 5_000 } }, serverSdk);
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  try {
    const replica = await startReplica();
    cleanups.push(() => replica.close());
    const cutter = await startCutter(replica.url);
    cleanups.push(() => cutter.close());
    const client = await connectClient(cutter.url);
    cleanups.push(() => client.close().catch(() => {}));

    // A re-issue: the call cut while it runs, then sent again with the same arguments (counted as it is sent).
    const call = client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'twice' } }).catch(() => 'cut');
    await until(() => (replica.truth.executions.write_record ?? 0) === 1, 'the call to start');
    cutter.cut();
    expect(await call).toBe('cut');
    await client.callTool({ name: 'write_record', arguments: { ms: 100, key: 'twice' } });
    const reissued = async () =>
      sampleOne(await fw.metrics(), METRICS.clientReissues.prometheusName, { outcome: 'reissued' }) === 1;
    await until(reissued, 'the re-issue');

    // A listen gap: the stream dropped, then a new one acknowledged before its first notification.
    const received: string[] = [];
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      received.push('tools');
    });
    const first = await client.listen({ toolsListChanged: true });
    cutter.cut();
    expect(await first.closed).toBe('remote');
    const second = await client.listen({ toolsListChanged: true });
    cleanups.push(() => second.close().catch(() => {}));
    replica.handler.notify.toolsChanged();
    await until(() => received.length === 1, 'the notification after the re-listen');
    return await fw.metrics();
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await fw.teardown();
  }
}
