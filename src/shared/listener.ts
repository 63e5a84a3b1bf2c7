/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What every port forkwatch listens on holds to, whoever connects: register's `/metrics` in the host's process and
 * `forkwatch exporter`. Node's own defaults let a connection that never finishes its headers live 60 s (checked
 * every 30 s) and take any number of connections, so a few hundred slow or silent clients held memory and sockets
 * for as long as they liked.
 */
import type { Server, ServerOptions, ServerResponse } from 'node:http';

export const LISTENER_LIMITS = {
  /**
   * A connection whose request headers are not complete this long after it opened is closed by then (slowloris,
   * silent clients): Node's own timeout is set one check interval shorter, as it is checked only that often.
   */
  headersTimeoutMs: 5_000,
  /** The whole request (these are GETs) within this. */
  requestTimeoutMs: 10_000,
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: 5_000,
  /** How often Node checks the two timeouts above (its default, 30 s, let a slow client stay 30 s longer). */
  checkIntervalMs: 1_000,
  /** The request line and headers together (Node's default, taken whatever --max-http-header-size says). */
  maxHeaderBytes: 16_384,
  /** Connections open at once; more are closed as they come. Each holds at most its headers and one answer. */
  maxConnections: 256,
  /** An answer the client has not taken this long after it was written: the connection is closed. */
  writeTimeoutMs: 10_000,
} as const;

const nodeHeadersTimeout = LISTENER_LIMITS.headersTimeoutMs - LISTENER_LIMITS.checkIntervalMs;

/** The options to create the server with (the ones Node reads only there). */
export function listenerOptions(): ServerOptions {
  return {
    headersTimeout: nodeHeadersTimeout,
    requestTimeout: LISTENER_LIMITS.requestTimeoutMs,
    keepAliveTimeout: LISTENER_LIMITS.keepAliveTimeoutMs,
    connectionsCheckingInterval: LISTENER_LIMITS.checkIntervalMs,
    maxHeaderSize: LISTENER_LIMITS.maxHeaderBytes,
  };
}

/** The limits a server takes after its creation. */
export function limitListener(server: Server): Server {
  server.headersTimeout = nodeHeadersTimeout;
  server.requestTimeout = LISTENER_LIMITS.requestTimeoutMs;
  server.keepAliveTimeout = LISTENER_LIMITS.keepAliveTimeoutMs;
  server.maxConnections = LISTENER_LIMITS.maxConnections;
  return server;
}

/** Ends the answer; a client that does not take it within the write timeout loses its connection. */
export function sendAnswer(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number>,
  body: string | Buffer,
): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
  res.end(body);
  if (res.writableFinished) return;
  const timer = setTimeout(() => res.destroy(), LISTENER_LIMITS.writeTimeoutMs);
  timer.unref();
  const clear = () => clearTimeout(timer);
  res.once('finish', clear);
  res.once('close', clear);
}
