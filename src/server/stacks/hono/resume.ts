/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * One resume request (a GET with Last-Event-ID) on @hono/mcp's `StreamableHTTPTransport`, from the request to its
 * outcome (server-resume.ts owns the span and the metrics). Unlike the SDK's transport, @hono/mcp answers 200 before
 * its store replays (the replay runs inside the SSE stream's callback), so a 200 with a store is concluded once the
 * replay has settled, with what the store wrapper (event-store.ts) saw of it.
 *
 * @hono/mcp's `MemoryEventStore` answers a cursor it does not know with the stream id `_unknown_stream`, and the
 * transport then serves a stream under that id which nothing ever writes to: recorded as the empty stream id, the
 * SDK store's answer for the same case, so it counts `unknown_cursor`.
 */
import type { ServerRuntime } from '../../server-runtime';
import type { ServerResume } from '../../server-resume';
import { type BoundaryParty, type StoreShare, boundaryWatchOf } from '../../replay-boundary-watch';

/** The stream id @hono/mcp's MemoryEventStore (0.3) resolves an unknown cursor to. */
export const HONO_UNKNOWN_STREAM = '_unknown_stream';

export class HonoResume {
  private status: number | undefined = undefined;
  private answerKnown = false;
  private replayDone = false;
  /** Told the answer once it is known to carry the standalone stream (the session observer's watch). */
  private onStandalone: ((response: unknown) => void) | undefined = undefined;
  private response: unknown = undefined;

  constructor(
    readonly resume: ServerResume,
    private readonly runtime: ServerRuntime,
    private readonly hasEventStore: boolean,
    private readonly standaloneStreamId: string,
    private readonly done: (resume: HonoResume) => void,
  ) {}

  get cursor(): string {
    return this.resume.init.cursor;
  }

  get replayCalled(): boolean {
    return this.resume.record.replayCalled;
  }

  /** handleGetRequest resolved with `response`. */
  answered(response: unknown, onStandalone: ((response: unknown) => void) | undefined): void {
    const status = (response as { status?: unknown } | undefined)?.status;
    this.status = typeof status === 'number' ? status : undefined;
    this.answerKnown = true;
    this.response = response;
    this.onStandalone = onStandalone;
    // Without a store the cursor is dropped: a fresh standalone stream.
    if (!this.hasEventStore) onStandalone?.(response);
    this.concludeWhenDue();
  }

  /** handleGetRequest threw or rejected: @hono/mcp's HTTPException carries the status Hono answers with. */
  refused(error: unknown): void {
    const status = (error as { status?: unknown } | null | undefined)?.status;
    if (typeof status === 'number') {
      this.status = status;
      this.answerKnown = true;
      this.concludeWhenDue();
      return;
    }
    this.resume.concludeFailed(error);
    this.done(this);
  }

  /** The store's replayEventsAfter is called for this resume: the `{ send }` it gets counts the events. */
  countingSender(sender: unknown, party: BoundaryParty, share: StoreShare | undefined): unknown {
    const { record } = this.resume;
    record.replayCalled = true;
    record.storeShared = share?.shared === true;
    const send = (sender as { send?: unknown } | null | undefined)?.send;
    if (typeof send !== 'function') return sender;
    const runtime = this.runtime;
    return {
      ...(sender as object),
      send: function send_(this: unknown, ...args: unknown[]) {
        if (!record.replaySettled) {
          record.replayedEvents++;
          if (share?.shared) {
            try {
              const owner = boundaryWatchOf(runtime).foreignOwner(party, args[0]);
              if (owner !== undefined) {
                record.foreignEvents++;
                record.foreignOwner ??= owner;
              }
            } catch (error) {
              runtime.diag.error('checking a replayed event failed', error);
            }
          }
        }
        return send.apply(this, args);
      },
    };
  }

  /** replayEventsAfter returned `result` (usually a promise of the stream id). */
  settling(result: unknown): void {
    const { record } = this.resume;
    const settled = Promise.resolve(result).then(
      value => {
        record.replayStreamId = value === HONO_UNKNOWN_STREAM ? '' : value;
        record.replaySettled = true;
      },
      error => this.failed(error),
    );
    record.pending.push(settled);
    settled.then(() => {
      this.replayDone = true;
      this.concludeWhenDue();
    });
  }

  /** The store threw or rejected. */
  failed(error: unknown): void {
    const { record } = this.resume;
    record.replaySettled = true;
    record.storeFailed = true;
    record.storeError = error;
  }

  /** Concluded once the answer is known and, for a 200 from a store, the replay has settled. */
  private concludeWhenDue(): void {
    try {
      if (!this.answerKnown) return;
      if (this.status === 200 && this.hasEventStore && !this.replayDone) return;
      if (this.status === 200 && this.resume.record.replayStreamId === this.standaloneStreamId) {
        this.onStandalone?.(this.response);
      }
      this.done(this);
      this.resume
        .concludeAnswered(this.status)
        .catch(error => this.runtime.diag.error('recording an @hono/mcp resume failed', error));
    } catch (error) {
      this.runtime.diag.error('recording an @hono/mcp resume failed; this request is not recorded', error);
    }
  }
}
