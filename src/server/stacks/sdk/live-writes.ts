/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The live events of one server transport that the SDK is about to write: stored while their stream had a
 * connection here, and not yet written. The delivery ledger is fed from the write itself (`writeSSEEvent`), not from
 * a reaction on every store promise: the SDK decides where an event goes only after its store resolved, and that
 * reaction, one promise and one job per event, was most of forkwatch's remaining server cost (issue 27).
 *
 * An event stays expected only when its connection went away before the store resolved (an asynchronous store,
 * such as Redis, and a drop within its latency), when the store rejected, or when a replay delivered it first (the
 * SDK then skips the write). Those leftovers are taken at the next fact about the stream: a store call that finds it
 * without a connection (its reaction runs after every earlier store of the stream resolved, and so after the SDK's
 * decisions about them: stores resolve in call order), a dropped standalone connection (they count as in flight), a
 * replay of the stream (it covered them), or close(). A rejected store is the one leftover that is not a lost
 * delivery (the app saw `send` fail): if its connection then drops, it counts among the in-flight events.
 *
 * Which stream a write goes to is read from the transport's own `_streamMapping` (stream id -> connection; the
 * connection is the Node ServerResponse up to SDK 1.24, else `{ controller, encoder, ... }`, and `writeSSEEvent`
 * takes that response or controller first). A write to a connection that is not mapped is a replay's (the SDK maps a
 * resumed stream only after its replay) and is not a live write.
 */
import type { MapLookupLike } from '../../../shared/internal-types';

/** Other streams with expected writes kept at once; beyond, the oldest are forgotten (memory stays bounded). */
const OTHERS_KEPT = 16;

/**
 * A few fields per session, and a map only while two streams have stores in flight at once: most of the time a
 * single stream has any, and none once its stores resolved.
 */
export class LiveWrites {
  /** The stream of the latest expectation and its count. */
  private streamId: string | undefined = undefined;
  private expected = 0;
  /** Other streams with expected writes (stores in flight on two streams at once, or leftovers). */
  private others: Map<string, number> | undefined = undefined;
  /** The last two connections written to and their streams: writes come in runs, or alternate between two. */
  private lastTarget: unknown = undefined;
  private lastTargetStreamId: string | undefined = undefined;
  private prevTarget: unknown = undefined;
  private prevTargetStreamId: string | undefined = undefined;

  /** An event of `streamId` was stored while the stream had a connection: a write of it should follow. */
  expect(streamId: string): void {
    if (streamId === this.streamId) {
      this.expected++;
      return;
    }
    if (this.expected > 0 && this.streamId !== undefined) this.setOther(this.streamId, this.expected);
    const prior = this.takeOther(streamId);
    this.streamId = streamId;
    this.expected = prior + 1;
  }

  /** A live write of `streamId` happened: one expected event less. */
  written(streamId: string): void {
    if (streamId === this.streamId) {
      if (this.expected > 0) this.expected--;
      return;
    }
    const other = this.takeOther(streamId);
    if (other > 1) this.setOther(streamId, other - 1);
  }

  /** The events of `streamId` still expected, which are no longer: see the header for when. */
  take(streamId: string): number {
    if (streamId !== this.streamId) return this.takeOther(streamId);
    const expected = this.expected;
    this.expected = 0;
    return expected;
  }

  clear(): void {
    this.streamId = undefined;
    this.expected = 0;
    this.others = undefined;
  }

  /**
   * The stream whose mapped connection `target` is, or undefined for a connection that is not mapped (a replay's,
   * or one already gone). One compare and one map lookup per write in a run on one stream.
   */
  streamOfWrite(mapping: MapLookupLike | undefined, target: unknown): string | undefined {
    if (typeof mapping?.get !== 'function' || target === null || typeof target !== 'object') return undefined;
    let streamId: string | undefined;
    if (target === this.lastTarget) streamId = this.lastTargetStreamId;
    else if (target === this.prevTarget) streamId = this.prevTargetStreamId;
    if (streamId === undefined || !carries(mapping.get(streamId), target)) {
      streamId = scan(mapping, target);
      if (streamId === undefined) return undefined;
    }
    if (target !== this.lastTarget) {
      this.prevTarget = this.lastTarget;
      this.prevTargetStreamId = this.lastTargetStreamId;
      this.lastTarget = target;
    }
    this.lastTargetStreamId = streamId;
    return streamId;
  }

  private takeOther(streamId: string): number {
    const others = this.others;
    const count = others?.get(streamId);
    if (count === undefined) return 0;
    others!.delete(streamId);
    if (others!.size === 0) this.others = undefined;
    return count;
  }

  private setOther(streamId: string, count: number): void {
    this.others ??= new Map();
    this.others.delete(streamId);
    this.others.set(streamId, count);
    for (const id of this.others.keys()) {
      if (this.others.size <= OTHERS_KEPT) break;
      this.others.delete(id);
    }
  }
}

/** Whether a `_streamMapping` value is the connection `target` (the response itself, or the one with its controller). */
function carries(connection: unknown, target: unknown): boolean {
  return (
    connection !== undefined &&
    (connection === target || (connection as { controller?: unknown } | null)?.controller === target)
  );
}

/** The stream id mapped to `target`, by a walk over the mapping (a new connection, or a switch of streams). */
function scan(mapping: MapLookupLike, target: unknown): string | undefined {
  const entries = (mapping as { entries?: () => Iterable<[unknown, unknown]> }).entries;
  if (typeof entries !== 'function') return undefined;
  for (const [id, connection] of entries.call(mapping)) {
    if (typeof id === 'string' && carries(connection, target)) return id;
  }
  return undefined;
}
