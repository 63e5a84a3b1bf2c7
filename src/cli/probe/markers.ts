/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe's own marker events: what its trigger made the server send on the standalone stream, by content (the
 * JSON-RPC method and params; a request's id is the server's and differs per call). With ids that prove no order
 * (UUIDs), a replay is proved only by these arriving on the resumed stream: a server that keeps sending live events
 * puts frames on any stream it answers, a fresh one included. Content also seen before the probe made the server
 * send anything is live traffic, and proves nothing. So does content that one call of the trigger brought and the next
 * did not: a live event that happened to come right after the call (a ticker's `live 7`), or a notification that
 * carries a counter (`notify 3` after `notify 1`), which no replay can match either.
 */
import type { SseFrame } from './sse-reader';

/** A message's content without its id, or undefined for data that is not a JSON-RPC message. */
export function markerOf(frame: SseFrame): string | undefined {
  try {
    const message = JSON.parse(frame.data) as { method?: unknown; params?: unknown; result?: unknown };
    if (typeof message !== 'object' || message === null || typeof message.method !== 'string') return undefined;
    return JSON.stringify([message.method, message.params ?? null]);
  } catch {
    return undefined;
  }
}

/** The markers among the frames a trigger made arrive, less what arrived unprompted. */
export function markersOf(caused: readonly SseFrame[], unprompted: readonly SseFrame[]): Set<string> {
  const live = new Set(unprompted.flatMap(f => markerOf(f) ?? []));
  return new Set(caused.flatMap(f => markerOf(f) ?? []).filter(m => !live.has(m)));
}

/** The markers every call of the trigger brought (each call's frames), less what arrived unprompted. */
export function reproducibleMarkers(
  calls: readonly (readonly SseFrame[])[],
  unprompted: readonly SseFrame[],
): Set<string> {
  const [first, ...rest] = calls;
  const markers = markersOf(first ?? [], unprompted);
  for (const frames of rest) {
    const again = markersOf(frames, unprompted);
    for (const marker of markers) if (!again.has(marker)) markers.delete(marker);
  }
  return markers;
}

/** A JSON-RPC 2.0 message (a request, a notification or a response): what a client can read from a frame. */
export function isJsonRpcMessage(data: string): boolean {
  try {
    const message = JSON.parse(data) as Record<string, unknown> | null;
    if (typeof message !== 'object' || message === null || message.jsonrpc !== '2.0') return false;
    return typeof message.method === 'string' || ('id' in message && ('result' in message || 'error' in message));
  } catch {
    return false;
  }
}
