/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The first undici release that publishes body chunks (nodejs/undici#4289, 2025-06-28). */
const FIRST_PUBLISHING = [7, 11, 0] as const;

/**
 * Whether the runtime's undici (`process.versions.undici`) publishes every response body chunk on
 * `undici:request:bodyChunkReceived`. Read from its version because nothing else tells before a request: a channel
 * exists as soon as anyone names it, and a probe would need a request to a server of its own (a `data:` URL never
 * reaches the dispatcher). 7.10.0's lib/core/request.js has no such channel, 7.11.0's publishes it. Node 20 and 22
 * bundle undici 6, Node 24 and later 7.11 or later (those before that get the fetch wrapper, which cannot read
 * undici 7's Response: they are not observed).
 */
export function undiciPublishesBodyChunks(version: string | undefined): boolean {
  if (typeof version !== 'string') return false;
  const parts = version.split('.').map(part => Number.parseInt(part, 10));
  for (let i = 0; i < FIRST_PUBLISHING.length; i++) {
    const part = parts[i] ?? 0;
    if (!Number.isFinite(part)) return false;
    if (part !== FIRST_PUBLISHING[i]) return part > FIRST_PUBLISHING[i]!;
  }
  return true;
}

/**
 * Where the runtime's undici publishes body chunks (Node 24 and later), forkwatch observes fetch through those
 * channels alone and leaves `fetch` alone (undici-channels.ts). Elsewhere (Node 22) it also wraps
 * `globalThis.fetch`, whose Response it can read (fetch-wrapper.ts). Decided once: the runtime's undici does not
 * change.
 */
export const observesThroughChannels = undiciPublishesBodyChunks(process.versions.undici);
