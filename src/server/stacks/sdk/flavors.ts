/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * How each flavour of the SDK's server transport reads its request and its answer: the web-standard class of 1.25
 * and 2.x (a Request in, a Response out) and the Node class of SDK 1.24 and earlier (an IncomingMessage in, written to
 * a ServerResponse).
 */
import type { TextMapGetter } from '@opentelemetry/api';
import type {
  HttpRequestLike,
  NodeHeadersLike,
  NodeRequestLike,
  NodeServerResponseLike,
  WebRequestLike,
} from '../../../shared/internal-types';
import { webClientDropWatch, webHeader, webHeadersGetter } from '../../web-request';

/** How each flavour reads its request and its answer. */
export interface Flavor {
  /** Each flavour reads its own request type (web Request, Node IncomingMessage); both take whatever the SDK got. */
  header(req: HttpRequestLike | undefined, name: string): string | undefined;
  getter: TextMapGetter<unknown>;
  /** HTTP status of the answer once handleGetRequest settled, if one was written. */
  status(result: unknown, args: unknown[]): number | undefined;
  /** Whether a writeSSEEvent call with this result put an event on the wire. */
  wrote(result: unknown): boolean;
  /** The message of writeSSEEvent(target, b, c, d), given b and c, and its event id, given c and d. */
  writtenMessage(b: unknown, c: unknown): unknown;
  writtenEventId(c: unknown, d: unknown): unknown;
  /** `send` looks up a request stream's connection before storing the event (up to 1.24), not after. */
  lookupBeforeStore: boolean;
  /**
   * Watches the client closing the GET's connection before the server ends the response: `dropped` runs once, if the
   * watch was armed (the returned function; see webClientDropWatch). The Node flavour listens at once.
   */
  onClientDrop(req: HttpRequestLike | undefined, args: unknown[], dropped: () => void): () => void;
}

export const webFlavor: Flavor = {
  header: webHeader,
  getter: webHeadersGetter,
  status(result) {
    const status = (result as { status?: unknown } | undefined)?.status;
    return typeof status === 'number' ? status : undefined;
  },
  // The web-standard writeSSEEvent returns false when the stream is gone.
  wrote: result => result === true,
  // writeSSEEvent(controller, encoder, message, eventId)
  writtenMessage: (_encoder, message) => message,
  writtenEventId: (_message, eventId) => eventId,
  lookupBeforeStore: false,
  onClientDrop: (req: WebRequestLike | undefined, _args, dropped) => webClientDropWatch(req, dropped),
};

/** A Node response's 'close' listener costs next to nothing: it is added at once, and arming does nothing. */
const armedAlready = () => {};

export const nodeFlavor: Flavor = {
  header(req: NodeRequestLike | undefined, name) {
    let value = req?.headers?.[name];
    if (Array.isArray(value)) value = value[value.length - 1];
    return typeof value === 'string' && value !== '' ? value : undefined;
  },
  getter: {
    get: (carrier: NodeHeadersLike | undefined, key) => carrier?.[key],
    keys: (carrier: NodeHeadersLike | undefined) =>
      carrier && typeof carrier === 'object' ? Object.keys(carrier) : [],
  },
  status(_result, args) {
    const res = args[1] as NodeServerResponseLike | undefined;
    return res?.headersSent === true && typeof res.statusCode === 'number' ? res.statusCode : undefined;
  },
  // ServerResponse.write returns false for back-pressure, with the data queued: it was still sent.
  wrote: () => true,
  // writeSSEEvent(res, message, eventId)
  writtenMessage: message => message,
  writtenEventId: eventId => eventId,
  lookupBeforeStore: true,
  onClientDrop(_req, args, dropped) {
    const res = args[1] as NodeServerResponseLike | undefined;
    if (typeof res?.once !== 'function') return armedAlready;
    res.once('close', () => {
      if (res.writableFinished !== true) dropped();
    });
    return armedAlready;
  },
};
