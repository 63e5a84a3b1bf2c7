/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Defaults that configuration reads in every process, apart from the code that uses them: a server process never
 * loads the client's ledger, nor a client the server's delivery ledger.
 */
export interface LedgerLimits {
  /** Sessions tracked at once. Default 10 000. */
  maxSessions: number;
  /** A session with no activity for this long is forgotten. Default 30 minutes. */
  maxIdleMs: number;
  /** Ids remembered per session for duplicate detection. Default 64. */
  recentIds: number;
}

export const DEFAULT_LEDGER_LIMITS: LedgerLimits = { maxSessions: 10_000, maxIdleMs: 30 * 60_000, recentIds: 64 };

/** How long the server waits for a client to resume a stream. SDK client defaults: first retry after 1 s, then x1.5,
 * at most 30 s apart, 2 retries. */
export const DEFAULT_DELIVERY_WINDOW_MS = 30_000;

/** Defaults of the `perRequest` config (protocol 2026-07-28): how long a broken exchange waits for its re-issue,
 * and how many exchanges, tasks and tool annotations are tracked at once. */
export const DEFAULT_REISSUE_WINDOW_MS = 60_000;
export const DEFAULT_MAX_TRACKED = 10_000;

/** Session ids a server transport that serves every session (tmcp's HttpTransport) remembers having issued: about
 * 100 bytes each for the SDK's 36-character ids, so about 5 MB (an id past MAX_HELD_SESSION_ID_CHARS is held as its
 * digest: at most about 20 MB whatever the peers send). The oldest is forgotten first; if it comes back, it counts as revived. */
export const MAX_HELD_SESSION_IDS = 50_000;
/** Past this many characters a held session id is kept as its digest (about 20 characters): the SDK's are 36. */
export const MAX_HELD_SESSION_ID_CHARS = 256;

/** A GET stream that ends with no event within this long of opening is an empty answer: the reconnect after it is
 * an empty reconnect (a storm when it repeats). An idle stream a balancer closes after its timeout lives longer. */
export const EMPTY_STREAM_WINDOW_MS = 5_000;
