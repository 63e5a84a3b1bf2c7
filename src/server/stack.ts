/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * What a server stack is to forkwatch, and what it hands the shared observers: read this first to add a stack.
 *
 * A stack is one folder, src/server/stacks/<name>/, and one row in lifecycle/targets.ts (its package, the versions
 * tested, the export names of its classes, and the folder to load the first time one of them is found). The
 * folder's index.ts exports `stack`: the patch of each class. It imports the shared observers (the files beside this
 * one), shared/ and core/, and never another stack (test/folder-layers.test.ts).
 *
 * Its patches only gather facts, read from the stack's own transport in its own terms, and hand them on in these:
 *
 * - each session's deliveries, as SessionFacts: session-facts.ts puts them in the process's delivery ledger
 *   (server-delivery.ts), whose rules (core/delivery-rules.ts) decide what was lost and why. A stack that hands them
 *   gets `forkwatch_server_undelivered_events_total` for free;
 * - each resume (a GET carrying Last-Event-ID): a ServerResume (server-resume.ts) begun when the request arrives and
 *   concluded from the answer, told what its replay sent through its ReplaySink;
 * - a session id it never held answered as a live session: `serverRevivedSessions`, an instrument of the runtime.
 */
import type { StoredEvent } from '../core/delivery-ledger';
import type { ClassPatch } from '../shared/class-patch';

export interface ServerStack {
  /** The patch of each of the stack's classes, by the export name its row in lifecycle/targets.ts lists. */
  readonly patches: Readonly<Record<string, ClassPatch>>;
}

/**
 * The delivery facts about one session, as a stack's patches see them: a session is a transport instance (the SDK's
 * and @hono/mcp's serve one each) or one session id of a transport that serves them all (tmcp's). Facts, not
 * judgements: the ledger judges.
 */
export interface SessionFacts {
  /** A request of the session other than a GET: the client is alive and talking here. */
  requestReceived(): void;
  /** A GET of the session: a listener here (a fresh stream or a resume). */
  getReceived(): void;
  /**
   * An event of `streamId` was sent: `open` when its stream had a connection here (written live), `replayable` when
   * an event store keeps it for a resume, `standalone` for the session's standalone (GET) stream. The eight values
   * are shared (session-facts.ts, storedEventOf): nothing is allocated per event.
   */
  eventSent(streamId: string, event: StoredEvent): void;
  /** The client dropped the connection of the standalone stream; `unwritten`: events stored for it, not yet written. */
  standaloneDropped(streamId: string, unwritten: number): void;
  /** A resume here replayed `events` events of `streamId`. */
  replaySent(streamId: string, events: number): void;
  /** The session ended here (DELETE, close()): nothing can come back for its events. */
  closed(): void;
}
