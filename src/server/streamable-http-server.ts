/**
 * Patch of the streamable HTTP server transports:
 *
 * - `WebStandardStreamableHTTPServerTransport` (@modelcontextprotocol/sdk from 1.25, @modelcontextprotocol/server
 *   2.x; the Node classes of both wrap it): `handleGetRequest(req)` answers with a Response.
 * - `StreamableHTTPServerTransport` of @modelcontextprotocol/sdk up to 1.24, the full Node implementation:
 *   `handleGetRequest(req, res)` writes to the ServerResponse (200 before the replay) and resolves when done.
 *
 * Hook points, the same in both:
 * - `handleGetRequest`: a GET carrying Last-Event-ID is a resume; its span starts here and the SDK's handling of
 *   it runs in a scope that the event store wrapper reads. The answer (Response status, or the status written on
 *   the ServerResponse) and what the store did decide the outcome.
 * - `handleRequest`, `send`, `replayEvents`: put the recording wrapper around `this._eventStore` before anything
 *   can use the store (see recording-event-store.ts), and note the protocol version the client sends.
 * - `writeSSEEvent`: counts events written on SSE streams by a transport without an event store (with one, every
 *   event goes through storeEvent first and is counted there).
 * - The delivery ledger (server-delivery.ts) learns every request of the session (`handleRequest`), every GET,
 *   every stored event and whether its stream had a connection here (transport-delivery.ts), what each resume
 *   replayed (server-resume.ts), what `send` had to drop without a store, and `close`.
 *
 * The request, the response and their streams are only read, never altered; nothing here throws into the SDK.
 *
 * What a transport cannot see: an application's own 404 for a session it does not know. Apps route by
 * Mcp-Session-Id to a transport (`sessions.get(id)`) and answer 404 themselves when there is none, so that GET never
 * reaches a transport. It shows only on the client (`rejected`) and in HTTP server metrics. The transport's own
 * 400/404/409 (validateSession, getStreamIdForEventId, conflicts) are recorded as `rejected`.
 */
import { type Context, type TextMapGetter, context, propagation, trace } from '@opentelemetry/api';
import { isWrapped } from '@opentelemetry/instrumentation';
import type {
  HttpRequestLike,
  NodeHeadersLike,
  NodeRequestLike,
  NodeServerResponseLike,
  StreamableHttpServerTransportLike,
  TransportSendOptionsLike,
  WebHeadersLike,
  WebRequestLike,
  Wrap,
} from '../internal-types';
import type { ServerTransportLabel } from '../names';
import type { ForkwatchRuntime } from '../runtime';
import { protocolHasResumability } from '../session-id';
import { isJsonRpcResponse } from '../core/replay-boundary';
import { type RecordingHooks, ensureRecordingStore, runInReplayScope } from './recording-event-store';
import { boundaryWatchOf } from './replay-boundary-watch';
import { ServerResume } from './server-resume';
import {
  isPrimingMessage,
  sendTarget,
  standaloneStreamId,
  storedEvent,
  storedEventOf,
  streamIsOpen,
} from './transport-delivery';

export const WEB_STANDARD_SERVER_METHODS = [
  'handleRequest',
  'handleGetRequest',
  'replayEvents',
  'writeSSEEvent',
  'send',
  'close',
] as const;
export const NODE_SERVER_METHODS = WEB_STANDARD_SERVER_METHODS;

const TRANSPORT: ServerTransportLabel = 'streamable_http';
/** Metric attributes, shared: nothing is allocated per event. */
const TRANSPORT_ATTRS = { transport: TRANSPORT };

/** How each flavour reads its request and its answer. */
interface Flavor {
  /** Each flavour reads its own request type (web Request, Node IncomingMessage); both take whatever the SDK got. */
  header(req: HttpRequestLike | undefined, name: string): string | undefined;
  getter: TextMapGetter<unknown>;
  /** HTTP status of the answer once handleGetRequest settled, if one was written. */
  status(result: unknown, args: unknown[]): number | undefined;
  /** Whether a writeSSEEvent call with this result put an event on the wire. */
  wrote(result: unknown): boolean;
  /** `send` looks up a request stream's connection before storing the event (up to 1.24), not after. */
  lookupBeforeStore: boolean;
  /** Calls `dropped` once if the client closes the GET's connection before the server ends the response. */
  onClientDrop(req: HttpRequestLike | undefined, args: unknown[], dropped: () => void): void;
}

const webFlavor: Flavor = {
  header(req: WebRequestLike | undefined, name) {
    const value = req?.headers?.get?.(name);
    return typeof value === 'string' && value !== '' ? value : undefined;
  },
  getter: {
    get: (carrier: WebHeadersLike | undefined, key) => carrier?.get?.(key) ?? undefined,
    keys: (carrier: WebHeadersLike | undefined) => (typeof carrier?.keys === 'function' ? [...carrier.keys()] : []),
  },
  status(result) {
    const status = (result as { status?: unknown } | undefined)?.status;
    return typeof status === 'number' ? status : undefined;
  },
  // The web-standard writeSSEEvent returns false when the stream is gone.
  wrote: result => result === true,
  lookupBeforeStore: false,
  // The Node adapter (@hono/node-server) aborts the request's signal when the connection closes before the response
  // finished; Deno, Bun and workers abort it on a client disconnect as well.
  onClientDrop(req: WebRequestLike | undefined, _args, dropped) {
    const signal = req?.signal;
    if (signal && !signal.aborted && typeof signal.addEventListener === 'function') {
      signal.addEventListener('abort', dropped, { once: true });
    }
  },
};

const nodeFlavor: Flavor = {
  header(req: NodeRequestLike | undefined, name) {
    let value = req?.headers?.[name];
    if (Array.isArray(value)) value = value[value.length - 1];
    return typeof value === 'string' && value !== '' ? value : undefined;
  },
  getter: {
    get: (carrier: NodeHeadersLike | undefined, key) => carrier?.[key],
    keys: (carrier: NodeHeadersLike | undefined) =>
      carrier && typeof carrier === 'object' ? Object.keys(carrier) : [],
  },
  status(_result, args) {
    const res = args[1] as NodeServerResponseLike | undefined;
    return res?.headersSent === true && typeof res.statusCode === 'number' ? res.statusCode : undefined;
  },
  // ServerResponse.write returns false for back-pressure, with the data queued: it was still sent.
  wrote: () => true,
  lookupBeforeStore: true,
  onClientDrop(_req, args, dropped) {
    const res = args[1] as NodeServerResponseLike | undefined;
    if (typeof res?.once !== 'function') return;
    res.once('close', () => {
      if (res.writableFinished !== true) dropped();
    });
  },
};

/** Latest MCP-Protocol-Version each transport instance received: from 2026-07-28 forkwatch stays silent. */
const protocolVersions = new WeakMap<object, string>();

export function patchWebStandardStreamableHttpServer(
  proto: StreamableHttpServerTransportLike,
  runtime: ForkwatchRuntime,
  wrap: Wrap,
): void {
  patchServer(proto, runtime, wrap, webFlavor);
}

export function patchNodeStreamableHttpServer(
  proto: StreamableHttpServerTransportLike,
  runtime: ForkwatchRuntime,
  wrap: Wrap,
): void {
  patchServer(proto, runtime, wrap, nodeFlavor);
}

/** From SDK 1.25, `StreamableHTTPServerTransport` only wraps the web-standard class, which is patched instead. */
export function describeNodeServerWrapper(proto: StreamableHttpServerTransportLike | undefined): string | undefined {
  if (typeof proto?.handleRequest === 'function' && typeof proto?.replayEvents !== 'function') {
    return 'a wrapper of WebStandardStreamableHTTPServerTransport (SDK >= 1.25), which is instrumented instead';
  }
  return undefined;
}

function patchServer(
  proto: StreamableHttpServerTransportLike,
  runtime: ForkwatchRuntime,
  wrap: Wrap,
  flavor: Flavor,
): void {
  const guard = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      runtime.diag.error(`${what} failed; this request is not recorded`, error);
    }
  };
  const boundary = boundaryWatchOf(runtime);
  const hooks: RecordingHooks = {
    active: transport =>
      runtime.enabled && isWrapped((transport as StreamableHttpServerTransportLike).handleGetRequest),
    boundary,
    onStore: (transport, streamId, message, share) => {
      if (!protocolHasResumability(protocolVersions.get(transport))) return undefined;
      const priming = isPrimingMessage(message);
      const openAtCall = streamIsOpen(transport, streamId);
      return eventId => {
        try {
          runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
          if (share.shared) boundary.stored(transport, eventId);
          if (!priming && typeof streamId === 'string') {
            const event = storedEvent(transport, streamId, openAtCall, flavor.lookupBeforeStore);
            runtime.serverDelivery.stored(transport, streamId, event);
            // A response written live completes its request stream: a later resume of it is another log's cursor.
            if (event.open && !event.standalone && isJsonRpcResponse(message)) {
              boundary.responseWritten(transport, streamId);
            }
          }
        } catch (error) {
          runtime.diag.error('recording a stored event failed', error);
        }
      };
    },
    onError: (what, error) => runtime.diag.error(`${what} failed`, error),
  };
  // Runs on every request and every send: no closure per call.
  const prepare = (transport: StreamableHttpServerTransportLike, req?: HttpRequestLike) => {
    try {
      if (req !== undefined) {
        const version = flavor.header(req, 'mcp-protocol-version');
        if (version !== undefined) protocolVersions.set(transport, version);
      }
      ensureRecordingStore(transport, hooks);
    } catch (error) {
      runtime.diag.error('wrapping the event store failed; this request is not recorded', error);
    }
  };

  wrap(
    proto,
    'handleRequest',
    original =>
      function handleRequest(
        this: StreamableHttpServerTransportLike,
        req: HttpRequestLike | undefined,
        ...rest: unknown[]
      ) {
        if (runtime.enabled) {
          prepare(this, req);
          // A GET is recorded by handleGetRequest: it may be a late resume, which is no proof that events were lost.
          const isGet = req?.method === 'GET';
          if (!isGet && protocolHasResumability(protocolVersions.get(this))) runtime.serverDelivery.activity(this);
        }
        return original.call(this, req, ...rest);
      },
  );

  wrap(
    proto,
    'send',
    original =>
      function send(this: StreamableHttpServerTransportLike, ...args: unknown[]) {
        if (runtime.enabled) {
          prepare(this);
          try {
            // With a store, the event is recorded by the store wrapper: nothing more per event here.
            if (!this._eventStore) recordSendWithoutStore(this, args, runtime);
          } catch (error) {
            runtime.diag.error('recording a send without an event store failed; this request is not recorded', error);
          }
        }
        return original.apply(this, args);
      },
  );

  wrap(
    proto,
    'close',
    original =>
      function close(this: StreamableHttpServerTransportLike, ...args: unknown[]) {
        const result = original.apply(this, args);
        // The SDK's close() tears its streams down synchronously; nothing can come back for pending events now.
        if (runtime.enabled) runtime.serverDelivery.closed(this);
        return result;
      },
  );

  wrap(
    proto,
    'replayEvents',
    original =>
      function replayEvents(this: StreamableHttpServerTransportLike, ...args: unknown[]) {
        if (runtime.enabled) prepare(this);
        return original.apply(this, args);
      },
  );

  wrap(
    proto,
    'writeSSEEvent',
    original =>
      function writeSSEEvent(this: StreamableHttpServerTransportLike, ...args: unknown[]) {
        const result = original.apply(this, args);
        if (runtime.enabled) {
          try {
            // With a store, every event was counted by storeEvent already.
            if (!this._eventStore && flavor.wrote(result) && protocolHasResumability(protocolVersions.get(this))) {
              runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
            }
          } catch (error) {
            runtime.diag.error('counting an SSE event failed', error);
          }
        }
        return result;
      },
  );

  wrap(
    proto,
    'handleGetRequest',
    original =>
      function handleGetRequest(
        this: StreamableHttpServerTransportLike,
        req: HttpRequestLike | undefined,
        ...rest: unknown[]
      ) {
        if (!runtime.enabled) return original.call(this, req, ...rest);
        prepare(this, req);
        let resume: ServerResume | undefined;
        let connection: StandaloneConnection | undefined;
        if (protocolHasResumability(protocolVersions.get(this))) {
          runtime.serverDelivery.listenerOpened(this);
          guard('watching a GET connection', () => {
            connection = watchStandaloneConnection(this, req, rest, flavor, runtime);
          });
        }
        guard('starting a server resume', () => {
          resume = beginResume(this, req, flavor, runtime);
        });
        if (!resume) {
          const result = original.call(this, req, ...rest);
          if (connection) {
            const watched = connection;
            Promise.resolve(result).then(
              value => guard('watching a GET connection', () => watched.answered(flavor.status(value, [req, ...rest]))),
              () => {},
            );
          }
          return result;
        }
        const started = resume;
        let result: unknown;
        try {
          result = runInReplayScope(started.scope, () =>
            context.with(started.context, () => original.call(this, req, ...rest)),
          );
        } catch (error) {
          guard('recording a failed resume', () => started.concludeFailed(error));
          throw error;
        }
        // Observe the answer without touching the promise the caller gets.
        Promise.resolve(result)
          .then(
            value => {
              const status = flavor.status(value, [req, ...rest]);
              const streamId = started.record.replayStreamId;
              guard('watching a GET connection', () => connection?.answered(status, streamId));
              return started.concludeAnswered(status);
            },
            error => started.concludeFailed(error),
          )
          .then(undefined, error => runtime.diag.error('recording a server resume failed', error));
        return result;
      },
  );
}

/** The GET connection of a session, which may come to carry its standalone stream. */
interface StandaloneConnection {
  /** The answer: a 200 that serves the standalone stream (a fresh GET, or a resume whose store resolved to it). */
  answered(status: number | undefined, resumedStreamId?: unknown): void;
}

/**
 * Tells the delivery ledger when the client drops a connection that carries the session's standalone stream: the
 * events written on it just before may never have reached the client (see delivery-ledger.ts). A drop before the
 * answer, or of a GET answered otherwise (409, 404, a request stream's resume), says nothing.
 */
function watchStandaloneConnection(
  transport: StreamableHttpServerTransportLike,
  req: HttpRequestLike | undefined,
  rest: unknown[],
  flavor: Flavor,
  runtime: ForkwatchRuntime,
): StandaloneConnection {
  let carries = false;
  flavor.onClientDrop(req, [req, ...rest], () => {
    if (carries) runtime.serverDelivery.connectionDropped(transport, standaloneStreamId(transport));
  });
  return {
    answered(status, resumedStreamId) {
      carries = status === 200 && (resumedStreamId === undefined || resumedStreamId === standaloneStreamId(transport));
    },
  };
}

/**
 * Without an event store, `send` writes an event at once or drops it (no connection for its stream): dropped events
 * go to the ledger (as `dropped` unless the client went away) and count as events the server produced.
 */
function recordSendWithoutStore(
  transport: StreamableHttpServerTransportLike,
  args: unknown[],
  runtime: ForkwatchRuntime,
): void {
  if (transport._eventStore || !protocolHasResumability(protocolVersions.get(transport))) return;
  const target = sendTarget(transport, args[0], args[1] as TransportSendOptionsLike | undefined);
  if (!target) return;
  const open = streamIsOpen(transport, target.streamId);
  if (!open) runtime.instruments.serverEvents.add(1, TRANSPORT_ATTRS);
  runtime.serverDelivery.stored(transport, target.streamId, storedEventOf(open, false, target.standalone));
}

function beginResume(
  transport: StreamableHttpServerTransportLike,
  req: HttpRequestLike | undefined,
  flavor: Flavor,
  runtime: ForkwatchRuntime,
): ServerResume | undefined {
  const cursor = flavor.header(req, 'last-event-id');
  if (cursor === undefined) return undefined; // a fresh stream, not a resume
  const protocolVersion = flavor.header(req, 'mcp-protocol-version');
  if (!protocolHasResumability(protocolVersion)) return undefined;
  const claimed = flavor.header(req, 'mcp-session-id');
  const own = typeof transport.sessionId === 'string' && transport.sessionId !== '' ? transport.sessionId : undefined;
  return new ServerResume(runtime, {
    transport: TRANSPORT,
    instance: transport,
    cursor,
    sessionId: claimed ?? own,
    protocolVersion,
    hasEventStore: Boolean(transport._eventStore),
    parent: parentContext(req, flavor),
  });
}

/**
 * The server span joins the HTTP server span when an HTTP instrumentation made one; otherwise the trace context
 * the client sent on the resume GET (forkwatch's client patch injects it), so both sides share one trace.
 */
function parentContext(req: HttpRequestLike | undefined, flavor: Flavor): Context {
  const active = context.active();
  if (trace.getSpan(active)) return active;
  const headers = req?.headers;
  return headers ? propagation.extract(active, headers, flavor.getter) : active;
}
