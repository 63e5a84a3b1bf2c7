/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What a stack's event store did for one resume request, as its patches record it (the SDK's recording-event-store.ts,
 * @hono/mcp's event-store.ts) and server-resume.ts reads it to conclude the resume. A stack without a store leaves
 * it as it was made.
 */
import type { EventOwner } from './replay-boundary-watch';

/** What the store did for one resume request. */
export interface ReplayRecord {
  readonly transport: object;
  /** getStreamIdForEventId was called (the store implements it). */
  lookupCalled: boolean;
  /** What it resolved to: the SDK answers 400 when this is empty. */
  lookupStreamId: unknown;
  replayCalled: boolean;
  /** Calls of the `send` callback during replayEventsAfter: the events replayed. */
  replayedEvents: number;
  /** The ids of the first MAX_REPLAYED_IDS events replayed: the fleet's delivery marks (issue 49) go with them. */
  readonly replayedIds: string[];
  /** What replayEventsAfter resolved to: '' (the SDK's InMemoryEventStore) means the cursor was not found. */
  replayStreamId: unknown;
  replaySettled: boolean;
  storeFailed: boolean;
  storeError: unknown;
  /** The store object is used by several sessions of this process. */
  storeShared: boolean;
  /** Replayed events this process stored for another session, and the first such session. */
  foreignEvents: number;
  foreignOwner: EventOwner | undefined;
  /** Observations still settling; the outcome is decided after them. */
  readonly pending: Promise<void>[];
}

export function newReplayRecord(transport: object): ReplayRecord {
  return {
    transport,
    lookupCalled: false,
    lookupStreamId: undefined,
    replayCalled: false,
    replayedEvents: 0,
    replayedIds: [],
    replayStreamId: undefined,
    replaySettled: false,
    storeFailed: false,
    storeError: undefined,
    storeShared: false,
    foreignEvents: 0,
    foreignOwner: undefined,
    pending: [],
  };
}

/** Replayed event ids a record keeps (a longer replay keeps its first ones). */
export const MAX_REPLAYED_IDS = 1024;

/** One resume request's scope: its cursor, and its record until the resume is concluded (then undefined). */
export interface ReplayScope {
  readonly cursor: string;
  record: ReplayRecord | undefined;
}
