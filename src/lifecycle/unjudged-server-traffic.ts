/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * MCP traffic forkwatch cannot judge, on the server side: node:http's `http.server.response.finish` channel tells of
 * every response this process's HTTP servers finish. One that answers an MCP request (a POST accepting both JSON and
 * SSE, as the streamable HTTP transport requires, answered 2xx with JSON or SSE) while no MCP server transport class
 * is patched is MCP served by a stack forkwatch has no patch for (tmcp, @hono/mcp, mcp-use's inlined server, a
 * hand-written one): forkwatch_instrumentation_info says so (`sdk_class="unjudged"`).
 *
 * A guest in the host's server: reads headers the host already set, never adds a listener to its objects, never
 * throws, and stops looking once it has seen one (the fact does not change). It listens only while no server
 * transport class is patched: a subscriber makes node:http publish a message for every response (issue 50).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { InstrumentationInfo } from './instrumentation-info';

const RESPONSE_FINISH = 'http.server.response.finish';

interface ServerRequestLike {
  method?: string;
  headers?: Record<string, string | string[] | undefined>;
}
interface ServerResponseLike {
  statusCode?: number;
  getHeader?(name: string): unknown;
  /** The header block as sent: writeHead(status, headers) writes its headers here only, not where getHeader reads. */
  _header?: unknown;
}

const CONTENT_TYPE_SENT = /\r\ncontent-type:[ \t]*([^\r\n]*)/i;

function contentTypeOf(response: ServerResponseLike): string {
  const set = response.getHeader?.('content-type');
  if (set !== undefined) return String(set);
  return typeof response._header === 'string' ? (CONTENT_TYPE_SENT.exec(response._header)?.[1] ?? '') : '';
}

/** Whether this request and its answer are an MCP streamable HTTP exchange, from headers alone. */
export function looksLikeMcpExchange(request: ServerRequestLike, response: ServerResponseLike): boolean {
  if (request.method !== 'POST') return false;
  const accept = String(request.headers?.accept ?? '');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) return false;
  const contentType = contentTypeOf(response);
  return contentType.includes('application/json') || contentType.includes('text/event-stream');
}

/** Watches the process's HTTP servers; returns the function that stops it. */
export function watchUnjudgedServerTraffic(info: InstrumentationInfo): () => void {
  let done = false;
  let subscribed = false;
  const onFinish = (message: unknown) => {
    try {
      if (info.hasServerTransport()) return;
      const { request, response } = message as { request: ServerRequestLike; response: ServerResponseLike };
      if (!looksLikeMcpExchange(request, response)) return;
      info.serverMcpAnswered();
      done = true;
      follow();
    } catch {
      // A message of another shape: nothing to learn from it.
    }
  };
  /** Subscribed exactly while there is something to learn: not seen yet, and no server transport patched. */
  const follow = () => {
    const wanted = !done && !info.hasServerTransport();
    if (wanted === subscribed) return;
    subscribed = wanted;
    if (wanted) subscribe(RESPONSE_FINISH, onFinish);
    else unsubscribe(RESPONSE_FINISH, onFinish);
  };
  const stopFollowing = info.onChange(follow);
  follow();
  return () => {
    done = true;
    stopFollowing();
    follow();
  };
}
