/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reads, from the SDK transport's own fields, what its `send` will do with an event, for the delivery ledger.
 *
 * The SDK (1.x both classes, 2.x) routes a message by request id: a response, or a message sent with
 * `relatedRequestId`, goes to the stream of that request (`_requestToStreamMapping`), everything else to the
 * standalone GET stream (`_standaloneSseStreamId`, '_GET_stream'). With an event store it stores the event first
 * and then writes it only if `_streamMapping` holds a connection for the stream: looked up after the store resolved
 * (web-standard 1.25+ and 2.x, and the standalone stream of 1.24), or before the store call (request streams up to
 * 1.24). Without a store, it writes or drops the event at once. In JSON response mode request streams are not SSE.
 *
 * Only read, never written; any surprise in these private fields reads as "unknown" and records nothing.
 */
import type { StoredEvent } from '../../../core/delivery-ledger';
import { storedEventOf } from '../../session-facts';
import type { StreamableHttpServerTransportLike, TransportSendOptionsLike } from '../../../shared/internal-types';

/** The SDK's priming event (`storeEvent(streamId, {})`) carries no message: it is not an event to deliver. */
export function isPrimingMessage(message: unknown): boolean {
  if (message === null || typeof message !== 'object') return false;
  // Stops at the first own key (a message's first is `jsonrpc`): no array of keys per event.
  for (const key in message) if (Object.hasOwn(message, key)) return false;
  return true;
}

export function standaloneStreamId(transport: StreamableHttpServerTransportLike | undefined): string {
  const id = transport?._standaloneSseStreamId;
  return typeof id === 'string' ? id : '_GET_stream';
}

/** Whether the transport holds a connection for the stream right now. */
export function streamIsOpen(transport: StreamableHttpServerTransportLike | undefined, streamId: unknown): boolean {
  const mapping = transport?._streamMapping;
  return typeof mapping?.get === 'function' && mapping.get(streamId) !== undefined;
}

function isResponse(message: unknown): boolean {
  return (
    message !== null && typeof message === 'object' && ('result' in message || 'error' in message) && 'id' in message
  );
}

/**
 * The stream a `send(message, options)` goes to, or undefined when the SDK will not put it on an SSE stream (JSON
 * response mode, a request id it does not know: it throws to the caller).
 */
export function sendTarget(
  transport: StreamableHttpServerTransportLike | undefined,
  message: unknown,
  options: TransportSendOptionsLike | undefined,
): { streamId: string; standalone: boolean } | undefined {
  let requestId = options?.relatedRequestId;
  if (isResponse(message)) requestId = (message as { id: unknown }).id;
  if (requestId === undefined) return { streamId: standaloneStreamId(transport), standalone: true };
  if (transport?._enableJsonResponse) return undefined;
  const streamId = transport?._requestToStreamMapping?.get?.(requestId);
  return typeof streamId === 'string' ? { streamId, standalone: false } : undefined;
}

/** How a storeEvent call's event is delivered, decided the way the SDK decides it. */
export function storedEvent(
  transport: StreamableHttpServerTransportLike | undefined,
  streamId: string,
  openAtCall: boolean,
  lookupBeforeStore: boolean,
): StoredEvent {
  const standalone = streamId === standaloneStreamId(transport);
  const open = lookupBeforeStore && !standalone ? openAtCall : streamIsOpen(transport, streamId);
  return storedEventOf(open, true, standalone);
}

/** Whether a request of the stream is still in flight on the transport (the SDK maps request ids to streams). */
export function streamHasRequestInFlight(
  transport: StreamableHttpServerTransportLike | undefined,
  streamId: unknown,
): boolean {
  const mapping = transport?._requestToStreamMapping;
  if (typeof mapping?.values !== 'function') return false;
  for (const id of mapping.values()) if (id === streamId) return true;
  return false;
}
