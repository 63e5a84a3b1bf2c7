/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Hands a fetch Response's body on through an observer, built on the body's first read: a caller that never reads
 * the body leaves it untouched. If the observer cannot be built, the original body is handed on (never an error).
 */
export function observeBodyOnRead(
  response: object,
  body: ReadableStream<Uint8Array>,
  observe: () => ReadableStream<Uint8Array>,
  onError: (error: unknown) => void,
): void {
  let observed: ReadableStream<Uint8Array> | undefined;
  Object.defineProperty(response, 'body', {
    configurable: true,
    enumerable: true,
    get() {
      if (!observed) {
        try {
          observed = observe();
        } catch (error) {
          onError(error);
          observed = body;
        }
      }
      return observed;
    },
  });
}
