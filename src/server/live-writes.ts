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
 * replay of the stream (it covered them), or close().
 *
 * Which stream a write goes to is read from the transport's own `_streamMapping` (stream id -> connection; the
 * connection is the Node ServerResponse up to SDK 1.24, else `{ controller, encoder, ... }`, and `writeSSEEvent`
 * takes that response or controller first). A write to a connection that is not mapped is a replay's (the SDK maps a
 * resumed stream only after its replay) and is not a live write.
 */
import type { MapLookupLike } from '../shared/internal-types';

class StreamWrites {
  expected = 0;
}

/** Streams remembered per transport before those with nothing expected are forgotten (request streams come and go). */
const STREAMS_KEPT = 16;

export class LiveWrites {
  private readonly streams = new Map<string, StreamWrites>();
  /** The stream written or stored to last: writes come in runs on one stream, so most lookups stop here. */
  private lastStreamId: string | undefined = undefined;
  private lastStream: StreamWrites | undefined = undefined;
  /** Connection target (controller or response) -> its stream id; a connection carries one stream for good. */
  private streamOfTarget: WeakMap<object, string> | undefined = undefined;
  private lastTarget: unknown = undefined;
  private lastTargetStreamId: string | undefined = undefined;

  /** An event of `streamId` was stored while the stream had a connection: a write of it should follow. */
  expect(streamId: string): void {
    this.streamFor(streamId).expected++;
  }

  /** A live write of `streamId` happened: one expected event less. */
  written(streamId: string): void {
    const stream = this.streamFor(streamId);
    if (stream.expected > 0) stream.expected--;
  }

  /** The events of `streamId` still expected, which are no longer: see the header for when. */
  take(streamId: string): number {
    const stream = streamId === this.lastStreamId ? this.lastStream : this.streams.get(streamId);
    if (stream === undefined) return 0;
    const expected = stream.expected;
    stream.expected = 0;
    return expected;
  }

  clear(): void {
    this.streams.clear();
    this.lastStreamId = undefined;
    this.lastStream = undefined;
  }

  /**
   * The stream whose mapped connection `target` is, or undefined for a connection that is not mapped (a replay's,
   * or one already gone). One compare and one map lookup per write in a run on one stream.
   */
  streamOfWrite(mapping: MapLookupLike | undefined, target: unknown): string | undefined {
    if (typeof mapping?.get !== 'function' || target === null || typeof target !== 'object') return undefined;
    let streamId = target === this.lastTarget ? this.lastTargetStreamId : this.streamOfTarget?.get(target as object);
    if (streamId === undefined || !carries(mapping.get(streamId), target)) {
      streamId = scan(mapping, target);
      if (streamId === undefined) return undefined;
      this.streamOfTarget ??= new WeakMap();
      this.streamOfTarget.set(target as object, streamId);
    }
    this.lastTarget = target;
    this.lastTargetStreamId = streamId;
    return streamId;
  }

  private streamFor(streamId: string): StreamWrites {
    if (streamId === this.lastStreamId) return this.lastStream!;
    let stream = this.streams.get(streamId);
    if (stream === undefined) {
      if (this.streams.size >= STREAMS_KEPT) this.forgetSettled();
      stream = new StreamWrites();
      this.streams.set(streamId, stream);
    }
    this.lastStreamId = streamId;
    this.lastStream = stream;
    return stream;
  }

  /** Forgets the streams with nothing expected, and the oldest others beyond the bound (memory stays bounded). */
  private forgetSettled(): void {
    for (const [id, stream] of this.streams) if (stream.expected === 0) this.streams.delete(id);
    for (const id of this.streams.keys()) {
      if (this.streams.size < STREAMS_KEPT) break;
      this.streams.delete(id);
    }
    this.lastStreamId = undefined;
    this.lastStream = undefined;
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
