/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * undici's request and response objects as its diagnostics channels publish them (core/request.js), and the few
 * things the channel observer (undici-channels.ts) does with one: read its headers, tap its body chunks where its
 * undici does not publish them, abort it (fail-loud mode's cut), and tell the app's abort from a broken connection.
 */

/** undici's request as its channels publish it (core/request.js). */
export interface UndiciRequest {
  method?: unknown;
  origin?: unknown;
  path?: unknown;
  /** `[name, value, name, value…]`, or `name: value\r\n…` before undici 6. */
  headers?: unknown;
}

export interface UndiciResponse {
  statusCode?: unknown;
  /** `[name, value…]` as Buffers (or strings). */
  headers?: unknown;
}

/**
 * Shadows `onData` on this one request object (undici 5 to 7 hand each response body chunk to it; 7.11 and later
 * also publish it from there, undici 8 has no such method and always publishes): `tap` gets the chunk first, then
 * undici's own method runs, unchanged, with the same arguments. Returns the function that takes the shadow off
 * (undici's prototype method shows through again); undefined when the request has no such method.
 */
export function tapBodyChunks(request: object, tap: (chunk: Uint8Array) => void): (() => void) | undefined {
  const original = (request as { onData?: unknown }).onData;
  if (typeof original !== 'function') return undefined;
  const shadow = function onData(this: unknown, ...args: unknown[]) {
    tap(args[0] as Uint8Array);
    return original.apply(this, args);
  };
  Object.defineProperty(request, 'onData', { value: shadow, writable: true, configurable: true });
  return () => {
    if (Object.getOwnPropertyDescriptor(request, 'onData')?.value === shadow)
      delete (request as { onData?: unknown }).onData;
  };
}

/**
 * Whether an error that ends a request is the app stopping it (its signal, or a cancel of the body): undici passes
 * the abort reason through as it is, where a broken connection, a timeout or a bad response is one of undici's own
 * errors (UND_ERR_*), the parser's (HPE_*) or the socket's (ECONNRESET…), each with a string code.
 */
export function isAbort(error: unknown): boolean {
  return typeof (error as { code?: unknown } | undefined)?.code !== 'string';
}

/**
 * Fail-loud mode's cut: undici's own abort of the request (set once it is connected, so before any byte of the
 * response), which errors the Response's body as a broken connection would. Queued as a microtask from inside the
 * chunk's publish: it runs before the promise jobs that carry that chunk on to the app's read, so the chunk never
 * arrives (an abort made inside the publish of a response's first chunk leaves fetch's body waiting forever on
 * undici 7.30).
 */
export function cutOf(request: UndiciRequest & { abort?: unknown }): (error: unknown) => void {
  return error => {
    queueMicrotask(() => {
      try {
        if (typeof request.abort === 'function') request.abort(error);
      } catch {
        // Already ended: nothing left to cut.
      }
    });
  };
}

/**
 * Reads undici's headers: a flat `[name, value…]` array (values strings, Buffers, or arrays of them) or, before
 * undici 6, a raw `name: value\r\n` string. Only what is asked for is decoded.
 */
export function headerReaderOf(headers: unknown): (name: string) => string | undefined {
  if (typeof headers === 'string') {
    return name => {
      for (const line of headers.split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) return line.slice(colon + 1).trim();
      }
      return undefined;
    };
  }
  if (!Array.isArray(headers)) return () => undefined;
  // A response's names and values are Buffers: String() decodes them.
  return name => {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      const key = headers[i];
      // fetch's names are lower case already: compared as they are first, with no string made.
      if (key?.length !== name.length || (key !== name && String(key).toLowerCase() !== name)) continue;
      const value = headers[i + 1];
      const text = Array.isArray(value) ? value.map(String).join(', ') : String(value);
      if (text !== '') return text;
    }
    return undefined;
  };
}
