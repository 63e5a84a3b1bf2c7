/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Wraps an SSE response body so forkwatch sees every byte before the SDK does, without changing any of them.
 *
 * The wrapper pulls one chunk when the SDK asks for one (highWaterMark 0: no read-ahead, no extra buffering),
 * feeds it to the frame observer, then hands the same chunk on. Only in fail-loud mode, and only on a resumed
 * stream before its first frame, are chunks held back until the verdict: the SDK could not have acted on a
 * partial frame anyway, and a forked frame must never reach it.
 */
import { SseFrameObserver } from '../../core/sse-frame-observer';
import { type PassThroughController, isBytes, passThroughStream, skipsChunk } from '../../shared/response-body';

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
  /**
   * False once frames are no longer needed (a class patch that hears the client's own ids and needed the bytes only
   * for a verdict): later chunks are handed on unparsed. Never true again once false.
   */
  wantsFrames?(): boolean;
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

/**
 * `response`: the observed stream takes the place of a fetch Response's own body (the wire observer puts it inside the
 * caller's Response: response-body.ts), of the same kind as that body (a byte stream for undici's own); the class
 * patches hand the SDK a default stream, as before.
 */
export function observeStream(
  source: ReadableStream<Uint8Array>,
  hooks: StreamObserverHooks,
  gate: StreamGate | undefined,
  onObserverError: (error: unknown) => void,
  kind: 'default' | 'response' = 'default',
): ObservedStream {
  const body = new ObservedBody(source, hooks, gate, onObserverError);
  const readable =
    kind === 'response'
      ? passThroughStream(source, {
          start: controller => {
            body.controller = controller;
          },
          pull: controller => body.pull(controller),
          cancel: reason => body.cancel(reason),
        })
      : new ReadableStream<Uint8Array>(
          {
            start: controller => {
              body.controller = controller;
            },
            pull: controller => body.pull(controller),
            cancel: reason => body.cancel(reason),
          },
          { highWaterMark: 0 },
        );
  return { readable, release: () => body.release(), cutNow: reason => body.cutNow(reason) };
}

/** The state of one observed body, between the source's reader and the consumer's controller. */
class ObservedBody {
  controller: PassThroughController | undefined = undefined;
  // Locked on first use, not in the constructor: a caller that reads the Response some other way (text()) still can.
  private sourceReader: ReadableStreamDefaultReader<Uint8Array> | undefined = undefined;
  private readonly observer: SseFrameObserver;
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private overflowed = false;
  private finished = false;
  private parsing = true;

  constructor(
    private readonly source: ReadableStream<Uint8Array>,
    private readonly hooks: StreamObserverHooks,
    private readonly gate: StreamGate | undefined,
    private readonly onObserverError: (error: unknown) => void,
  ) {
    this.observer = new SseFrameObserver({
      onFrame: id => hooks.onFrame(id),
      onComment: () => hooks.onComment?.(),
    });
  }

  async pull(controller: PassThroughController): Promise<void> {
    // Loop until something is handed on: a pull that enqueues nothing would not be called again.
    for (;;) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await this.reader().read();
      } catch (error) {
        if (this.finished) return;
        this.end(controller, error);
        return controller.error(error);
      }
      if (this.finished) return;
      if (result.done) {
        this.end(controller, undefined);
        return controller.close();
      }
      const chunk = result.value;
      // An empty chunk cannot go into a byte stream, and a pull that enqueues nothing would not be called again; a
      // default stream hands it on, as the source did.
      if (skipsChunk(controller, chunk)) continue;
      if (this.parsing && isBytes(chunk)) {
        this.hooks.onChunk?.();
        this.observe(chunk);
        this.parsing = this.hooks.wantsFrames?.() ?? true;
      }
      const gate = this.gate;
      if (gate?.cut()) return this.cut(controller, new Error('forkwatch: forked stream cut (fail-loud mode)'));
      if (gate && !this.overflowed && gate.holding()) {
        this.held.push(chunk);
        this.heldBytes += isBytes(chunk) ? chunk.byteLength : 0;
        if (this.heldBytes <= MAX_HELD_BYTES) continue;
        this.overflowed = true;
      }
      this.flushHeld(controller);
      return controller.enqueue(chunk);
    }
  }

  cancel(reason: unknown): Promise<void> {
    if (!this.finished) {
      this.finished = true;
      this.observer.end();
      this.hooks.onCancel?.();
    }
    return this.reader().cancel(reason);
  }

  /** Hands held chunks on (the verdict came from a timer, not from a chunk). */
  release(): void {
    if (!this.finished && this.controller && this.held.length > 0) this.flushHeld(this.controller);
  }

  cutNow(reason: unknown): void {
    if (this.controller) this.cut(this.controller, reason);
  }

  private reader(): ReadableStreamDefaultReader<Uint8Array> {
    this.sourceReader ??= this.source.getReader();
    return this.sourceReader;
  }

  private observe(chunk: Uint8Array): void {
    try {
      this.observer.push(chunk);
    } catch (error) {
      // The observer never throws by design; if it ever does, forkwatch goes blind, the stream does not break.
      this.onObserverError(error);
    }
  }

  /** The body ended (`error` undefined) or failed: held chunks go on before the consumer's stream ends. */
  private end(controller: PassThroughController, error: unknown): void {
    this.finished = true;
    this.observer.end();
    if (error === undefined) this.hooks.onEnd();
    else this.hooks.onEnd(error);
    this.flushHeld(controller);
  }

  private flushHeld(controller: PassThroughController): void {
    for (const chunk of this.held) controller.enqueue(chunk);
    this.held = [];
    this.heldBytes = 0;
  }

  private cut(controller: PassThroughController, reason: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.held = [];
    this.heldBytes = 0;
    this.reader()
      .cancel(reason)
      .catch(() => {});
    const error = this.gate?.cutError?.();
    if (error !== undefined) controller.error(error);
    else controller.close();
  }
}
