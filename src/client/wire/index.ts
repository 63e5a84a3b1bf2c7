/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The wire observer: MCP clients forkwatch has no class patch for (@ai-sdk/mcp, mcp-remote, a hand-written client),
 * judged from what they send and receive. One entry point per runtime path, and one work module per path for an MCP
 * exchange, loaded on the first one:
 *
 * - undici's diagnostics channels (undici-channels.ts → channel-watches.ts), subscribed on every line: the `undici`
 *   npm package's fetch (mcp-remote's) never goes through `globalThis.fetch`, and its requests are published there
 *   whatever the runtime bundles. On Node 24 and later this is the whole observer.
 * - a wrapper of `globalThis.fetch` (fetch-wrapper.ts → fetch-session-get.ts), on Node 22 only, whose undici publishes
 *   no body chunks. The requests it observes are claimed while their fetch runs, so the channels leave them alone:
 *   each is observed once.
 *
 * Both read a request with session-get-request.ts, start and conclude a resume with session-get.ts, watch a protocol
 * 2026-07-28 exchange with per-request-exchange.ts, and hand every stream to the client's one resumed-stream
 * observer (client/observer/).
 */
import type { ForkwatchRuntime } from '../../shared/runtime';
import { installFetchWrapper } from './fetch-wrapper';
import { observesThroughChannels } from './undici-version';

/** Installs the wire observer; returns the function that takes it off again (fetch restored, channels unsubscribed). */
export function installWireObserver(runtime: ForkwatchRuntime): () => void {
  // Loaded once installed: a process configured with `observeFetch: false` never loads it.
  const channels = require('./undici-channels') as typeof import('./undici-channels');
  const unsubscribe = channels.installUndiciChannelObserver(runtime);
  if (observesThroughChannels) return unsubscribe;
  const unwrap = installFetchWrapper(runtime);
  return () => {
    unwrap();
    unsubscribe();
  };
}
