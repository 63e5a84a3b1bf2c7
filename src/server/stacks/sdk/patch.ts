/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patch of the MCP SDK's streamable HTTP server transports:
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
 * - `writeSSEEvent`: a live event reached its stream's connection (with the store wrapper, this is what records it
 *   in the delivery ledger: see live-writes.ts); without an event store, it counts the event.
 * - The wrappers are short named functions in one table keyed by method (SERVER_WRAPPERS). They only hand facts
 *   on to the transport's session observer (session-observer.ts), which holds the protocol version, decides
 *   whether the session is recorded, and is the one place that feeds the delivery ledger.
 *
 * The request, the response and their streams are only read, never altered; nothing here throws into the SDK.
 *
 * What a transport cannot see: an application's own 404 for a session it does not know. Apps route by
 * Mcp-Session-Id to a transport (`sessions.get(id)`) and answer 404 themselves when there is none, so that GET never
 * reaches a transport. It shows only on the client (`rejected`) and in HTTP server metrics. The transport's own
 * 400/404/409 (validateSession, getStreamIdForEventId, conflicts) are recorded as `rejected`.
 */
import type { ServerRuntime } from '../../server-runtime';
import { isWrapped } from '@opentelemetry/instrumentation';
import type {
  HttpRequestLike,
  SdkMethod,
  StreamableHttpServerTransportLike,
  Wrap,
} from '../../../shared/internal-types';
import { withEnteredContext } from '../../../shared/entered-context';
import { observedPromise } from '../../../shared/observed-promise';
import { type RecordingHooks, isRecordingStore, openReplayScope, recorderOf } from './recording-event-store';
import { boundaryWatchOf } from '../../replay-boundary-watch';
import { type Flavor, nodeFlavor, webFlavor } from './flavors';
import type { ServerResume } from '../../server-resume';
import { type StandaloneConnection, knownSessionObserver, sessionObserverOf } from './session-observer';

export const WEB_STANDARD_SERVER_METHODS = [
  'handleRequest',
  'handleGetRequest',
  'replayEvents',
  'writeSSEEvent',
  'send',
  'close',
] as const;
export const NODE_SERVER_METHODS = WEB_STANDARD_SERVER_METHODS;

type ServerMethod = (typeof WEB_STANDARD_SERVER_METHODS)[number];
type Method = SdkMethod<StreamableHttpServerTransportLike>;

/** What every wrapper of one patch shares. */
interface ServerPatch {
  runtime: ServerRuntime;
  flavor: Flavor;
  /** The store wrapper's hooks (recording-event-store.ts). */
  hooks: RecordingHooks;
}

export function patchWebStandardStreamableHttpServer(
  proto: StreamableHttpServerTransportLike,
  runtime: ServerRuntime,
  wrap: Wrap,
): void {
  patchServer(proto, runtime, wrap, webFlavor);
}

export function patchNodeStreamableHttpServer(
  proto: StreamableHttpServerTransportLike,
  runtime: ServerRuntime,
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
  runtime: ServerRuntime,
  wrap: Wrap,
  flavor: Flavor,
): void {
  // The wrapped handleGetRequest last found on a transport: per stored event, one compare instead of isWrapped's
  // four property reads (an unpatch puts the SDK's own method back, a re-patch a new wrapper: both differ).
  let wrappedGet: unknown;
  const hooks: RecordingHooks = {
    active: transport => {
      if (!runtime.enabled) return false;
      const get = (transport as StreamableHttpServerTransportLike).handleGetRequest;
      if (get === wrappedGet) return true;
      if (!isWrapped(get)) return false;
      wrappedGet = get;
      return true;
    },
    boundary: boundaryWatchOf(runtime),
    onError: (what, error) => runtime.diag.error(`${what} failed`, error),
  };
  const patch: ServerPatch = { runtime, flavor, hooks };
  for (const method of WEB_STANDARD_SERVER_METHODS) {
    wrap(proto, method, original => SERVER_WRAPPERS[method](original as Method, patch) as typeof original);
  }
}

/** One wrapper factory per method: each only hands what it saw to the transport's session observer. */
const SERVER_WRAPPERS: Readonly<Record<ServerMethod, (original: Method, patch: ServerPatch) => Method>> = {
  handleRequest: wrapHandleRequest,
  handleGetRequest: wrapHandleGetRequest,
  replayEvents: wrapReplayEvents,
  writeSSEEvent: wrapWriteSSEEvent,
  send: wrapSend,
  close: wrapClose,
};

/** Every request of the session; a GET is recorded by handleGetRequest. */
function wrapHandleRequest(original: Method, { runtime, flavor, hooks }: ServerPatch): Method {
  // The SDK's arguments forwarded as they came, not re-spread: no array per request (issue 50); copied only for the
  // first request, whose answer is read.
  return function handleRequest(this: StreamableHttpServerTransportLike, req?: unknown) {
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    if (!runtime.enabled) return original.apply(this, arguments as unknown as unknown[]);
    const session = sessionObserverOf(this, runtime, flavor);
    session.prepare(req as HttpRequestLike | undefined, hooks);
    session.requestReceived(req as HttpRequestLike | undefined);
    const first = session.requestStarted(req as HttpRequestLike | undefined);
    // biome-ignore lint/complexity/noArguments: as above
    const result = original.apply(this, arguments as unknown as unknown[]);
    if (!first) return result;
    // biome-ignore lint/complexity/noArguments: copied once, for the first request only
    const args = Array.prototype.slice.call(arguments) as unknown[];
    return whenSettled(
      result,
      value => session.firstRequestAnswered(flavor.status(value, args)),
      () => {},
      'watching a revived session failed',
      runtime,
    );
  };
}

/**
 * Every event the transport sends: without a store, the observer records where it went. With the store already
 * wrapped (every request wraps it), the store wrapper records the event: one field read per event here.
 */
function wrapSend(original: Method, { runtime, flavor, hooks }: ServerPatch): Method {
  return function send(this: StreamableHttpServerTransportLike) {
    if (runtime.enabled && !isRecordingStore(this._eventStore)) {
      const session = sessionObserverOf(this, runtime, flavor);
      session.prepare(undefined, hooks);
      // biome-ignore lint/complexity/noArguments: read, never copied
      session.sent(arguments as unknown as unknown[]);
    }
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    return original.apply(this, arguments as unknown as unknown[]);
  };
}

function wrapClose(original: Method, { runtime, flavor }: ServerPatch): Method {
  return function close(this: StreamableHttpServerTransportLike, ...args: unknown[]) {
    const result = original.apply(this, args);
    if (runtime.enabled) sessionObserverOf(this, runtime, flavor).closed();
    return result;
  };
}

function wrapReplayEvents(original: Method, { runtime, flavor, hooks }: ServerPatch): Method {
  return function replayEvents(this: StreamableHttpServerTransportLike, ...args: unknown[]) {
    if (runtime.enabled) sessionObserverOf(this, runtime, flavor).prepare(undefined, hooks);
    return original.apply(this, args);
  };
}

/**
 * Every event written on an SSE stream. With forkwatch's store wrapper, a live write is what records a live event
 * in the delivery ledger (the store call only expected it); without a store, it counts the event.
 */
function wrapWriteSSEEvent(original: Method, { runtime, flavor }: ServerPatch): Method {
  // Named parameters read, `arguments` only forwarded: an `arguments` object handed to another function would be
  // allocated for every event.
  return function writeSSEEvent(
    this: StreamableHttpServerTransportLike,
    a?: unknown,
    b?: unknown,
    c?: unknown,
    d?: unknown,
  ) {
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    const result = original.apply(this, arguments as unknown as unknown[]);
    if (runtime.enabled) {
      const store = this._eventStore;
      const recorder = recorderOf(store, this);
      if (recorder !== undefined) recorder.liveEventWritten(a, b, c, d, result);
      else if (isRecordingStore(store)) knownSessionObserver(this)?.liveEventWritten(a, b, c, d, result);
      else if (!store) sessionObserverOf(this, runtime, flavor).sseEventWritten(result);
    }
    return result;
  };
}

/** A GET: a listener here, and with Last-Event-ID a resume whose answer and store calls decide its outcome. */
function wrapHandleGetRequest(original: Method, { runtime, flavor, hooks }: ServerPatch): Method {
  return function handleGetRequest(this: StreamableHttpServerTransportLike, req?: unknown) {
    // biome-ignore lint/complexity/noArguments: the SDK's own arguments, whatever they are, with no copy
    if (!runtime.enabled) return original.apply(this, arguments as unknown as unknown[]);
    const request = req as HttpRequestLike | undefined;
    const session = sessionObserverOf(this, runtime, flavor);
    session.prepare(request, hooks);
    // biome-ignore lint/complexity/noArguments: one copy, read by the answer's watch and handed to the SDK
    const args = Array.prototype.slice.call(arguments) as unknown[];
    const cursor = session.cursorOf(request);
    const connection = session.getReceived(request, args, cursor);
    const resume = cursor === undefined ? undefined : session.beginResume(request, cursor);
    if (!resume) {
      const result = original.apply(this, args);
      return connection ? watchAnswer(result, connection, flavor, args, runtime) : result;
    }
    let result: unknown;
    try {
      openReplayScope(this, resume.scope);
      result = withEnteredContext(resume.context, () => original.apply(this, args));
    } catch (error) {
      concludeFailed(resume, error, runtime);
      throw error;
    }
    return concludeResume(result, resume, connection, flavor, args, runtime);
  };
}

/**
 * Runs `answered` (or `failed`) once the SDK's handler settled; returns what the caller gets in place of `result`, a
 * promise that settles as it does (shared/observed-promise.ts: a reaction on the handler's own promise would take an
 * unawaited rejection from the host).
 */
function whenSettled(
  result: unknown,
  answered: (value: unknown) => unknown,
  failed: (error: unknown) => unknown,
  what: string,
  runtime: ServerRuntime,
): unknown {
  return observedPromise(result, answered, failed, error => runtime.diag.error(what, error));
}

/** The answer to a fresh GET: whether its connection carries the standalone stream. */
function watchAnswer(
  result: unknown,
  connection: StandaloneConnection,
  flavor: Flavor,
  args: unknown[],
  runtime: ServerRuntime,
): unknown {
  return whenSettled(
    result,
    value => connection.answered(flavor.status(value, args)),
    () => {},
    'watching a GET connection failed; this request is not recorded',
    runtime,
  );
}

/** The answer to a resume: its outcome, and whether its connection carries the standalone stream. */
function concludeResume(
  result: unknown,
  resume: ServerResume,
  connection: StandaloneConnection | undefined,
  flavor: Flavor,
  args: unknown[],
  runtime: ServerRuntime,
): unknown {
  const answered = (value: unknown) => {
    const status = flavor.status(value, args);
    connection?.answered(status, resume.record.replayStreamId);
    return resume.concludeAnswered(status);
  };
  return whenSettled(
    result,
    answered,
    error => resume.concludeFailed(error),
    'recording a server resume failed',
    runtime,
  );
}

function concludeFailed(resume: ServerResume, error: unknown, runtime: ServerRuntime): void {
  try {
    resume.concludeFailed(error);
  } catch (failure) {
    runtime.diag.error('recording a failed resume failed; this request is not recorded', failure);
  }
}
