/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The shapes forkwatch relies on in code it does not own: OpenTelemetry packages loaded on demand (optional peers)
 * and the MCP SDK classes it patches. Not exported from the package.
 */

/** A module loaded with require() whose exports forkwatch reads by name. */
export type OptionalPeerModule = object;

/** The part of @opentelemetry/sdk-logs' LoggerProvider that register uses. */
export interface LoggerProviderLike {
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The part of a TracerProvider (sdk-trace-base 2.x, sdk-trace 3.x) that register uses. */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): import('@opentelemetry/api').Tracer;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** An OTLP log exporter, handed to sdk-logs' BatchLogRecordProcessor unchanged. */
export type LogRecordExporterLike = object;

/** The part of import-in-the-middle (any major) that forkwatch uses: a hook on a package's internal files. */
export interface ImportInTheMiddleModule {
  Hook: new (
    modules: string[],
    options: { internals: boolean },
    hook: (exports: object, name: string, basedir: string | undefined) => unknown,
  ) => { unhook(): void };
}

// --- The MCP SDK classes forkwatch patches ---
//
// Shapes of the SDK objects the patches read, in the style of @opentelemetry/instrumentation-undici's
// internal-types.ts. They describe @modelcontextprotocol/sdk 1.17+ and @modelcontextprotocol/client|server 2.x
// without importing them (the SDK is not a dependency). Everything is optional, and typed `unknown` where forkwatch
// checks the value before use: most of these are private fields, and a version that lacks or changes one must leave
// forkwatch inert, never broken.

/**
 * A method of an SDK class as a patch sees it: the SDK's own `this`, arguments and result, passed through untouched.
 * Declared through a method signature so that its parameters compare bivariantly: a wrapper may name the shape it
 * expects of an argument (`stream: ReadableStream | null | undefined`) and still stand in for the SDK's method.
 */
export type SdkMethod<This> = {
  sdkMethod(this: This, ...args: unknown[]): unknown;
}['sdkMethod'];

/**
 * shimmer's `wrap` (InstrumentationBase._wrap) as the patch modules use it: the wrapper gets the prototype's own
 * method and returns its replacement, which the SDK then calls on its instances.
 */
export type Wrap = <Proto extends object>(
  target: Proto,
  name: string,
  wrapper: (original: SdkMethod<Proto>) => SdkMethod<Proto>,
) => void;

/** A class's prototype, as the instrumentation looks methods up on it by name. */
export interface PrototypeLike {
  readonly [name: string]: unknown;
}

/** A class exported by an SDK module (or whatever else sits under that export name). */
export interface ClassLike {
  prototype?: PrototypeLike;
}

/** The exports of an SDK module, as the instrumentation looks classes up on them by name. */
export interface ModuleExportsLike {
  readonly [name: string]: unknown;
}

/** The part of a Map the patches read: a lookup that yields undefined for a missing key. */
export interface MapLookupLike {
  get?(key: unknown): unknown;
  values?(): Iterable<unknown>;
}

/**
 * The EventStore interface of the SDK (`storeEvent`, `replayEventsAfter`, and optionally `getStreamIdForEventId`).
 * The arguments and results are the SDK's and the store's, passed through unchanged; each method is checked for
 * before it is called.
 */
export interface EventStoreLike {
  /** `storeEvent(streamId, message)`: resolves to the new event's id. */
  storeEvent?(streamId: unknown, message: unknown, ...rest: unknown[]): unknown;
  /** `replayEventsAfter(lastEventId, { send })`: resolves to the stream id of the cursor. */
  replayEventsAfter?(
    lastEventId: unknown,
    options: EventStoreReplayOptionsLike | undefined,
    ...rest: unknown[]
  ): unknown;
  /** Optional in the SDK's interface (1.24+): the SDK answers 400 when it resolves to nothing. */
  getStreamIdForEventId?(eventId: unknown, ...rest: unknown[]): unknown;
}

/** The options the SDK passes to `replayEventsAfter`: `send(eventId, message)` writes one replayed event. */
export interface EventStoreReplayOptionsLike {
  send?: unknown;
  readonly [option: string]: unknown;
}

/**
 * A streamable HTTP server transport instance: `WebStandardStreamableHTTPServerTransport` (SDK 1.25+, server 2.x)
 * or the 1.x `StreamableHTTPServerTransport` before 1.25. Only `_eventStore` is ever written (the recording wrapper,
 * see server/stacks/sdk/recording-event-store.ts); everything else is only read.
 */
export interface StreamableHttpServerTransportLike {
  /** Public in every version; a string once the session is initialised (stateful mode). */
  sessionId?: unknown;
  _eventStore?: EventStoreLike | null;
  /** Stream id -> the connection (SSE controller or ServerResponse) writing it, while one is open. */
  _streamMapping?: MapLookupLike;
  /** JSON-RPC request id -> the id of the stream its response goes to. */
  _requestToStreamMapping?: MapLookupLike;
  /** '_GET_stream' in every version so far. */
  _standaloneSseStreamId?: unknown;
  _enableJsonResponse?: unknown;
  /** Undefined (an own field set to undefined) in stateless mode: the transport validates no session id. */
  sessionIdGenerator?: unknown;
  /** 1.x's node transport wraps a web-standard one since 1.24. */
  _webStandardTransport?: unknown;
  handleRequest?: unknown;
  handleGetRequest?: unknown;
  replayEvents?: unknown;
}

/** The options of a server transport's `send(message, options)` that decide its stream. */
export interface TransportSendOptionsLike {
  relatedRequestId?: unknown;
}

/** The client transports' options for a GET stream (`_startOrAuthSse`, `_handleSseStream`, `_scheduleReconnection`). */
export interface StartSseOptionsLike {
  /** Exactly the Last-Event-ID the GET sends, when it is a resume. */
  resumptionToken?: unknown;
  /** Called by the SDK with the id of every event it reads from the stream, before the app gets the event. */
  onresumptiontoken?: unknown;
}

/** `StreamableHTTPClientTransport` (1.x and 2.x): the fields forkwatch reads and the handler it calls. */
export interface StreamableHttpClientTransportLike {
  /** A getter in 1.x and 2.x; `_sessionId` is its backing field. */
  sessionId?: unknown;
  _sessionId?: unknown;
  protocolVersion?: unknown;
  _protocolVersion?: unknown;
  _abortController?: { signal?: { aborted?: unknown } };
  /** The application's error handler: fail-loud mode reports StreamForkDetected through it. */
  onerror?: (error: Error) => void;
  /** Set by the SDK's Protocol: every message received, on any stream or in a JSON body. */
  onmessage?: unknown;
}

/** The Headers `_commonHeaders()` resolves to (a web Headers in 1.x and 2.x); both methods are checked before use. */
export interface WritableHeadersLike {
  has(name: string): boolean;
  set(name: string, value: string): void;
}

/** The legacy `SSEClientTransport`: its EventSource, the init it constructs it with, and its own fetch. */
export interface SseClientTransportLike {
  _eventSource?: EventSourceLike;
  _eventSourceInit?: EventSourceInitLike;
  _fetch?: unknown;
}

/** The `eventsource` package's init: forkwatch replaces `fetch` and keeps every other option. */
export interface EventSourceInitLike {
  fetch?: unknown;
  readonly [option: string]: unknown;
}

/** The part of an EventSource (the `eventsource` package, or a global one) that forkwatch listens on. */
export interface EventSourceLike {
  /** 0 CONNECTING, 1 OPEN, 2 CLOSED. */
  readyState?: unknown;
  addEventListener?(type: string, listener: (event: EventSourceEventLike | undefined) => void): void;
}

/** A MessageEvent of an EventSource: `endpoint` carries the POST URL in `data`, `message` the frame's id. */
export interface EventSourceEventLike {
  data?: unknown;
  lastEventId?: unknown;
}

// --- HTTP objects: web-standard Request/Response and Node's IncomingMessage/ServerResponse ---

/** Headers as fetch accepts them (and Node's IncomingHttpHeaders): a Headers with `get`, a record, or pairs. */
export interface HeadersInitLike {
  get?(name: string): string | null | undefined;
  readonly [name: string]: unknown;
}

/** The `init` argument of a fetch call, or a Request passed as its input: the two fields forkwatch reads. */
export interface RequestInitLike {
  method?: unknown;
  headers?: HeadersInitLike;
}

/** A fetch() that forkwatch wraps or delegates to; its result is the caller's, returned unchanged. */
export type FetchLike = (
  this: unknown,
  input: unknown,
  init?: RequestInitLike,
) => Promise<WebResponseLike | null | undefined>;

/** A fetch Response, as forkwatch reads it before handing it on unchanged. */
export interface WebResponseLike {
  ok?: unknown;
  /** A number in every fetch; forkwatch still checks it where it reads it as one. */
  status?: number;
  headers?: { get?(name: string): string | null | undefined };
  body?: ReadableStream<Uint8Array> | null;
}

/** What the server transports read of the incoming request, web Request or Node IncomingMessage alike. */
export interface HttpRequestLike {
  method?: unknown;
  headers?: unknown;
}

/** A web-standard Request: headers with `get`, and `keys` for context extraction. */
export interface WebRequestLike extends HttpRequestLike {
  headers?: WebHeadersLike;
  /** Aborted when the client's connection closes before the response finished (@hono/node-server, Deno, Bun). */
  signal?: AbortSignalLike;
}

export interface AbortSignalLike {
  aborted?: unknown;
  addEventListener?(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
}

export interface WebHeadersLike {
  get?(name: string): string | null | undefined;
  keys?(): Iterable<string>;
}

/** Node's IncomingMessage: lower-cased header names, repeated headers as arrays. */
export interface NodeRequestLike extends HttpRequestLike {
  headers?: NodeHeadersLike;
}

export interface NodeHeadersLike {
  readonly [name: string]: string | string[] | undefined;
}

/** Node's ServerResponse as the 1.x transport (before 1.25) leaves it once `handleGetRequest` settled. */
export interface NodeServerResponseLike {
  headersSent?: unknown;
  statusCode?: unknown;
  /** True once end() was called and everything flushed: a 'close' before that is the client dropping it. */
  writableFinished?: unknown;
  once?(event: 'close', listener: () => void): unknown;
}
