/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Every way a condition can fail, and the one remedy the report names for it (`fix:`). A failed condition is made
 * only by `failed()`, with a cause this table lists for that condition (checked by the type of `failed`, and by
 * test/probe/probe-fixes.test.ts for every condition of both stream kinds). The probe chooses the cause from what it
 * saw (diagnose.ts): the SDK's example store by its id shape, another replica by resumes that went both ways.
 */
import type { ConditionResult, ConditionStatus, StreamKind } from './report';
import type { CONDITIONS, STANDALONE_CONDITIONS } from './report';

export type ConditionKey =
  | `request.${(typeof CONDITIONS)[number]}`
  | `standalone.${(typeof STANDALONE_CONDITIONS)[number]}`;

interface Fix {
  /** The conditions this cause can fail. */
  fails: readonly ConditionKey[];
  /** One line: what to change, concretely. */
  fix: string;
}

export const FIXES = {
  no_event_store: {
    fails: ['request.event_ids'],
    fix: "configure an event store on the server's transport (TypeScript SDK: `new StreamableHTTPServerTransport({ eventStore })`): without one, events carry no ids and `Last-Event-ID` is ignored",
  },
  response_without_id: {
    fails: ['request.event_ids'],
    fix: 'store every event of a request stream in the event store, its response too, so that every frame carries an id',
  },
  no_priming_event: {
    fails: ['request.event_ids'],
    fix: 'send a priming event (an id and empty data) first on every SSE stream, as protocol 2025-11-25 requires: upgrade the server SDK to a release that does',
  },
  unsendable_ids: {
    fails: ['request.event_ids', 'standalone.event_ids'],
    fix: 'make event ids printable ASCII: a client sends the id back in the `Last-Event-ID` header, and fetch refuses a header value with a control character or a character beyond Latin-1',
  },
  standalone_ids_missing: {
    fails: ['standalone.event_ids'],
    fix: "store the standalone GET stream's events in the event store too (the TypeScript SDK does for the `_GET_stream` stream once the transport has an eventStore), so that they carry ids",
  },
  notify_tool_silent: {
    fails: ['standalone.event_ids'],
    fix: "send the tool's notifications on the standalone stream (no `relatedRequestId`: `server.sendLoggingMessage`, not the handler's `extra.sendNotification`) from the process that holds the session's GET stream (sticky routing on `Mcp-Session-Id`)",
  },
  standalone_get_refused: {
    fails: ['standalone.event_ids'],
    fix: 'answer the standalone GET with an SSE stream, or with 405 if the server never sends server-initiated messages: those are the two answers the spec allows, and a client refused otherwise has no stream for them',
  },
  other_replica: {
    fails: ['request.replay', 'request.repeated_resumes', 'standalone.replay', 'standalone.repeated_resumes'],
    fix: 'route every request of a session to one replica (sticky routing on the `Mcp-Session-Id` header) or share one event store between replicas: a resume that reaches another replica finds a fresh log there',
  },
  other_replica_refuses: {
    fails: [
      'request.replay',
      'request.repeated_resumes',
      'standalone.cursor_accepted',
      'standalone.replay',
      'standalone.repeated_resumes',
    ],
    fix: 'route every request of a session to one replica (sticky routing on the `Mcp-Session-Id` header), or share sessions and one event store between replicas: the other replicas refuse its cursors',
  },
  example_store_id_order: {
    fails: ['request.replay', 'request.repeated_resumes'],
    fix: "replace the SDK's example `InMemoryEventStore`: it replays in id order, and an event stored in its cursor's millisecond can sort before it and is never replayed; use a store that replays in the order events were stored",
  },
  example_store_get_stream: {
    fails: ['standalone.replay', 'standalone.continues', 'standalone.repeated_resumes'],
    fix: "key events per stream as `storeEvent` was given them (answer `getStreamIdForEventId` from that and filter `replayEventsAfter` on it): the SDK's example `InMemoryEventStore` takes the stream id from the text before the id's first `_`, which is '' for `_GET_stream_…` ids",
  },
  replay_missing: {
    fails: ['request.replay', 'request.repeated_resumes', 'standalone.replay', 'standalone.repeated_resumes'],
    fix: "replay what was stored after the cursor on the cursor's stream, first, when a client resumes (`EventStore.replayEventsAfter`), and refuse with 4xx a cursor whose log is gone instead of answering 200",
  },
  cursor_refused: {
    fails: [
      'request.replay',
      'request.repeated_resumes',
      'standalone.cursor_accepted',
      'standalone.replay',
      'standalone.repeated_resumes',
    ],
    fix: "accept every cursor the server issued: the event store's `getStreamIdForEventId` and `replayEventsAfter` must find each id it stored, the standalone stream's too, for as long as a client may resume",
  },
  resumed_stream_ended: {
    fails: ['standalone.replay', 'standalone.continues'],
    fix: 'keep a resumed standalone stream open: replay the missed events on it and go on writing new ones, as on the stream it replaces',
  },
  not_json_rpc: {
    fails: ['standalone.replay', 'standalone.continues'],
    fix: 'send only JSON-RPC messages (one per SSE event, in its `data:` lines) on the streams, replays included: a client cannot read anything else',
  },
  no_affinity_stream: {
    fails: ['standalone.continues'],
    fix: "route a session's requests to the replica that holds its standalone GET stream (sticky routing on `Mcp-Session-Id`), or relay notifications between replicas: one made elsewhere is stored and never written to the stream",
  },
  resumed_stream_silent: {
    fails: ['standalone.continues'],
    fix: "make the resumed connection the session's standalone stream: the server must write what it sends after a resume to the new connection, not to the dropped one",
  },
  unknown_cursor_served_example_store: {
    fails: ['request.bogus_cursor_refused', 'standalone.bogus_cursor_refused'],
    fix: "implement `getStreamIdForEventId` on the event store (the SDK's example `InMemoryEventStore` has none), returning undefined for an id it does not hold, so that the SDK answers an unknown cursor with 400",
  },
  unknown_cursor_served: {
    fails: ['request.bogus_cursor_refused', 'standalone.bogus_cursor_refused'],
    fix: 'refuse a `Last-Event-ID` the event store does not hold with 400 or 404 instead of opening a fresh stream (the TypeScript SDK does once the store implements `getStreamIdForEventId`)',
  },
  unknown_cursor_server_error: {
    fails: ['request.bogus_cursor_refused', 'standalone.bogus_cursor_refused'],
    fix: 'answer an unknown `Last-Event-ID` with 400 or 404, not with a server error, so that a client knows the log is gone and starts afresh',
  },
} as const satisfies Record<string, Fix>;

export type FailureCause = keyof typeof FIXES;

/** The causes that can fail condition `K`. */
export type CauseOf<K extends ConditionKey> = {
  [C in FailureCause]: K extends (typeof FIXES)[C]['fails'][number] ? C : never;
}[FailureCause];

/** A failed condition: what was seen (`detail`, `evidence`), why (`cause`) and what to change (`fix`). */
export function failed<K extends ConditionKey>(
  _condition: K,
  cause: CauseOf<K>,
  detail: string,
  evidence: Record<string, unknown>,
): ConditionResult {
  return { status: 'fail', detail, evidence, cause, fix: FIXES[cause].fix };
}

/** A condition result that is not a failure (a fail always goes through `failed`). */
export function result(
  status: Exclude<ConditionStatus, 'fail'>,
  detail: string,
  evidence?: Record<string, unknown>,
): ConditionResult {
  return evidence === undefined ? { status, detail } : { status, detail, evidence };
}

export function conditionKey(stream: StreamKind, name: string): ConditionKey {
  return `${stream}.${name}` as ConditionKey;
}
