/**
 * Wraps an SSE response body so forkwatch sees every byte before the SDK does, without changing any of them.
 *
 * The wrapper pulls one chunk when the SDK asks for one (highWaterMark 0: no read-ahead, no extra buffering),
 * feeds it to the frame observer, then hands the same chunk on. Only in fail-loud mode, and only on a resumed
 * stream before its first frame, are chunks held back until the verdict: the SDK could not have acted on a
 * partial frame anyway, and a forked frame must never reach it.
 */
import { SseFrameObserver } from '../core/sse-frame-observer';

export interface StreamObserverHooks {
  /** A frame was dispatched; runs before the SDK sees the chunk that completed it. */
  onFrame(id: string | undefined): void;
  onComment?(): void;
  /** A chunk arrived; its frames follow. One clock read per chunk serves all of them. */
  onChunk?(): void;
  /** The body ended (`error` undefined) or failed. Not called when the consumer cancelled. */
  onEnd(error?: unknown): void;
  /** The SDK (or the app) cancelled the stream. */
  onCancel?(): void;
}

export interface StreamGate {
  /** True while chunks must be held back (fail-loud mode, verdict pending). */
  holding(): boolean;
  /** True once the stream must be cut (fail-loud verdict: forked). */
  cut(): boolean;
  /**
   * The error to end the consumer's stream with when it is cut; without one the stream ends cleanly. A client that
   * has no onerror forkwatch can reach (a transport seen only on the wire) learns of the fork this way.
   */
  cutError?(): unknown;
}

/** Bytes held back at most while waiting for a first frame; past this the stream flows unchecked. */
const MAX_HELD_BYTES = 1 << 20;

export interface ObservedStream {
  readable: ReadableStream<Uint8Array>;
  /** Hands held chunks on (the verdict came from a timer, not from a chunk). */
  release(): void;
  /** Ends delivery to the SDK and cancels the body. */
  cutNow(reason: unknown): void;
}

export function observeStream(
  source: ReadableStream<Uint8Array>,
  hooks: StreamObserverHooks,
  gate: StreamGate | undefined,
  onObserverError: (error: unknown) => void,
): ObservedStream {
  // Locked on first use, not here: a caller that reads the Response some other way (text()) still can.
  let sourceReader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const reader = () => (sourceReader ??= source.getReader());
  const observer = new SseFrameObserver({
    onFrame: id => hooks.onFrame(id),
    onComment: () => hooks.onComment?.(),
  });
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  let overflowed = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  let finished = false;

  const observe = (chunk: Uint8Array) => {
    try {
      observer.push(chunk);
    } catch (error) {
      // The observer never throws by design; if it ever does, forkwatch goes blind, the stream does not break.
      onObserverError(error);
    }
  };
  const flushHeld = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    for (const chunk of held) controller.enqueue(chunk);
    held = [];
    heldBytes = 0;
  };
  const cut = (controller: ReadableStreamDefaultController<Uint8Array>, reason: unknown) => {
    if (finished) return;
    finished = true;
    held = [];
    heldBytes = 0;
    reader()
      .cancel(reason)
      .catch(() => {});
    const error = gate?.cutError?.();
    if (error !== undefined) controller.error(error);
    else controller.close();
  };

  const readable = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controllerRef = controller;
      },
      async pull(controller) {
        // Loop until something is handed on: a pull that enqueues nothing would not be called again.
        for (;;) {
          let result: ReadableStreamReadResult<Uint8Array>;
          try {
            result = await reader().read();
          } catch (error) {
            if (finished) return;
            finished = true;
            observer.end();
            hooks.onEnd(error);
            flushHeld(controller);
            controller.error(error);
            return;
          }
          if (finished) return;
          if (result.done) {
            finished = true;
            observer.end();
            hooks.onEnd();
            flushHeld(controller);
            controller.close();
            return;
          }
          const chunk = result.value;
          hooks.onChunk?.();
          observe(chunk);
          if (gate?.cut()) {
            cut(controller, new Error('forkwatch: forked stream cut (fail-loud mode)'));
            return;
          }
          if (gate && !overflowed && gate.holding()) {
            held.push(chunk);
            heldBytes += chunk.byteLength;
            if (heldBytes <= MAX_HELD_BYTES) continue;
            overflowed = true;
          }
          flushHeld(controller);
          controller.enqueue(chunk);
          return;
        }
      },
      cancel(reason) {
        if (!finished) {
          finished = true;
          observer.end();
          hooks.onCancel?.();
        }
        return reader().cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );

  return {
    readable,
    release() {
      if (!finished && controllerRef && held.length > 0) flushHeld(controllerRef);
    },
    cutNow(reason) {
      if (controllerRef) cut(controllerRef, reason);
    },
  };
}
