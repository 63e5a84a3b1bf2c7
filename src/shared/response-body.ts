/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Observes a fetch Response's body without changing the Response (the fetch wrapper's way, on runtimes whose undici
 * publishes no body chunks: client/wire/fetch-wrapper.ts). The Response handed to the caller is the very object fetch
 * returned, with no own property added: only the stream inside its body record is swapped, at once, for a lazy
 * pass-through stream of the same kind (passThroughStream). Every use of the Response API then runs undici's own code
 * on it (`body`, `clone()`, `text()`,
 * `bodyUsed`, their errors), and the original stream's reader is only taken when the app first reads.
 *
 * The body record is undici 5/6's `response[Symbol(state)].body.stream` (Node 18 to 22). A Response without it (not
 * undici's, or a later undici that keeps its state in private fields) is left alone and not observed.
 */

interface BodyRecord {
  stream: ReadableStream<Uint8Array>;
}

/**
 * The body record of a Node fetch Response whose stream is still untouched, or undefined. Reading `body` through the
 * prototype getter is what the caller would do: it neither locks nor disturbs the stream.
 */
function untouchedBodyRecordOf(response: object): BodyRecord | undefined {
  const stateKey = Object.getOwnPropertySymbols(response).find(key => key.description === 'state');
  if (!stateKey) return undefined;
  const record = (response as Record<symbol, { body?: BodyRecord | null } | undefined>)[stateKey]?.body;
  const stream = record?.stream;
  if (!stream || stream !== (response as { body?: unknown }).body) return undefined;
  if (stream.locked || (response as { bodyUsed?: unknown }).bodyUsed !== false) return undefined;
  return record;
}

/**
 * Puts `observe(body)` in place of the Response's body stream; false (and the Response untouched) when the Response
 * is not a Node fetch Response with an unread body. If the observer cannot be built, nothing changes (never an error).
 */
export function observeResponseBody(
  response: object,
  observe: (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>,
  onError: (error: unknown) => void,
): boolean {
  try {
    const record = untouchedBodyRecordOf(response);
    if (!record) return false;
    record.stream = observe(record.stream);
    return true;
  } catch (error) {
    onError(error);
    return false;
  }
}

/** The chunk source a pass-through byte stream pulls from: one read per pull, the reader taken on the first. */
export function lazyReader(source: ReadableStream<Uint8Array>): () => ReadableStreamDefaultReader<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return () => {
    reader ??= source.getReader();
    return reader;
  };
}

/**
 * Whether `stream` is a byte stream (undici's own bodies are; a `new ReadableStream()` an app, a server in the same
 * process or `Response.clone()`'s tee of one hands out is not). A BYOB reader is taken and released at once: the
 * stream is neither read nor disturbed.
 */
export function isByteStream(stream: ReadableStream<unknown>): boolean {
  try {
    stream.getReader({ mode: 'byob' }).releaseLock();
    return true;
  } catch {
    return false;
  }
}

/**
 * A stream of the source's kind that calls `pull` when the app asks for bytes: highWaterMark 0, so nothing is read
 * ahead of the app and no buffer is added. A byte source gets a byte stream (a BYOB reader works on it as on the
 * source); any other source a default stream that hands each chunk on as the very object the source gave, empty or
 * not Uint8Array included. Enqueuing into a byte stream transfers the chunk's buffer: a default source's chunk can
 * still be held by someone else (the other branch of a tee, which `Response.clone()` makes, or a producer reusing a
 * buffer), whose copy would be emptied (the clone of an SSE response read back empty on Node 22, docs/host-suite.md).
 */
export function passThroughStream(
  like: ReadableStream<unknown>,
  source: {
    start?(controller: PassThroughController): void;
    pull(controller: PassThroughController): Promise<void>;
    cancel(reason: unknown): Promise<void>;
  },
): ReadableStream<Uint8Array> {
  if (!isByteStream(like)) {
    return new ReadableStream<Uint8Array>(
      {
        start: controller => source.start?.(defaultController(controller)),
        pull: controller => source.pull(defaultController(controller)),
        cancel: reason => source.cancel(reason),
      },
      { highWaterMark: 0 },
    );
  }
  let wrapped: PassThroughController;
  return new ReadableStream({
    type: 'bytes',
    start: controller => {
      wrapped = byteController(controller);
      source.start?.(wrapped);
    },
    pull: () => source.pull(wrapped),
    cancel: reason => source.cancel(reason),
  } as UnderlyingByteSource) as ReadableStream<Uint8Array>;
}

/** The three calls a pass-through makes; close() also ends a pending BYOB read, which would otherwise wait. */
export interface PassThroughController {
  /** A byte stream: an empty chunk cannot go in (the pull reads on instead), and every chunk must be a Uint8Array. */
  readonly bytes?: boolean;
  enqueue(chunk: Uint8Array): void;
  close(): void;
  error(reason: unknown): void;
}

function byteController(controller: ReadableByteStreamController): PassThroughController {
  return {
    bytes: true,
    enqueue: chunk => controller.enqueue(chunk as Uint8Array<ArrayBuffer>),
    close: () => {
      controller.close();
      controller.byobRequest?.respond(0);
    },
    error: reason => controller.error(reason),
  };
}

function defaultController(controller: ReadableStreamDefaultController<Uint8Array>): PassThroughController {
  return {
    enqueue: chunk => controller.enqueue(chunk),
    close: () => controller.close(),
    error: reason => controller.error(reason),
  };
}

/** A chunk a pass-through of this controller's kind cannot hand on (an empty one into a byte stream): read on. */
export function skipsChunk(controller: PassThroughController, chunk: unknown): boolean {
  return controller.bytes === true && (chunk as { byteLength?: unknown } | undefined)?.byteLength === 0;
}

/** A chunk the SSE parsers can read: bytes. A default stream may carry anything; the rest passes unread. */
export function isBytes(chunk: unknown): chunk is Uint8Array {
  // By its tag, not instanceof: a Uint8Array of another realm (a vm context) is bytes too; Buffer's tag is the same.
  return Object.prototype.toString.call(chunk) === '[object Uint8Array]';
}
