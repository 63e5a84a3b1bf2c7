/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The session ids one server transport holds, for a transport that serves every session and keeps no list of its own
 * that forkwatch can read (tmcp's HttpTransport: its session managers are private). An id is held once this transport
 * issued it (the answer to a request without one carried it) or answered it as a live session; it is let go on a
 * DELETE the transport answered. Bounded in count (the oldest id is forgotten first, MAX_HELD_SESSION_IDS) and in
 * bytes: an id longer than MAX_HELD_SESSION_ID_CHARS (a peer's header can carry about 16 KB) is held as its digest,
 * as re-issue keys are.
 */
import { MAX_HELD_SESSION_IDS, MAX_HELD_SESSION_ID_CHARS } from '../../../core/defaults';
import { boundedKey } from '../../../core/per-request';

const keyOf = (id: string) => boundedKey(id, MAX_HELD_SESSION_ID_CHARS);

export class HeldSessions {
  /** Insertion order is age: a Set iterates oldest first. */
  private readonly ids = new Set<string>();

  constructor(private readonly limit = MAX_HELD_SESSION_IDS) {}

  has(id: string): boolean {
    return this.ids.has(keyOf(id));
  }

  hold(sessionId: string): void {
    const id = keyOf(sessionId);
    if (this.ids.has(id)) return;
    if (this.ids.size >= this.limit) {
      for (const oldest of this.ids) {
        this.ids.delete(oldest);
        break;
      }
    }
    this.ids.add(id);
  }

  release(id: string): void {
    this.ids.delete(keyOf(id));
  }

  get size(): number {
    return this.ids.size;
  }
}
