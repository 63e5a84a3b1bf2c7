/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patch of tmcp's `HttpTransport` (@tmcp/transport-http 0.9, ESM only, no @modelcontextprotocol package):
 * `respond(request, ctx)` answers every request of every session with a Response (or null, for another path).
 *
 * Its design, read from its source: SSE frames carry no `id:`, Last-Event-ID is never read, and a GET for any session
 * id (unknown too) gets 200 and a fresh stream unless a stream of that id is open here (409). The one wrapper hands
 * each request and its answer to the transport's observer (fresh-stream-observer.ts), which counts what that design
 * does: resumes `ignored`, session ids it did not hold answered as live (revived, `empty`), and, with the
 * construction watched (construction.ts), the broadcasts a session's cut stream missed (undelivered, `dropped`).
 *
 * The request and the Response are only read (status, the `mcp-session-id` header), never altered or awaited by the
 * host's caller on forkwatch's account: the caller gets the very promise respond returned.
 */
import { observedPromise } from '../../../shared/observed-promise';
import type { ServerRuntime } from '../../server-runtime';
import type { SdkMethod, WebRequestLike, Wrap } from '../../../shared/internal-types';
import { withEnteredContext } from '../../../shared/entered-context';
import { freshStreamObserverOf } from './fresh-stream-observer';

export const TMCP_HTTP_TRANSPORT_METHODS = ['respond'] as const;

interface HttpTransportLike {
  respond(...args: unknown[]): unknown;
}
type Method = SdkMethod<HttpTransportLike>;

export function patchTmcpHttpTransport(proto: HttpTransportLike, runtime: ServerRuntime, wrap: Wrap): void {
  wrap(proto, 'respond', original => wrapRespond(original as Method, runtime) as typeof original);
}

function wrapRespond(original: Method, runtime: ServerRuntime): Method {
  return function respond(this: HttpTransportLike, request?: unknown, ...rest: unknown[]) {
    if (!runtime.enabled) return original.call(this, request, ...rest);
    const watch = freshStreamObserverOf(this, runtime).requestReceived(request as WebRequestLike | undefined);
    if (watch === undefined) return original.call(this, request, ...rest);
    let result: unknown;
    try {
      result = watch.resume
        ? withEnteredContext(watch.resume.context, () => original.call(this, request, ...rest))
        : original.call(this, request, ...rest);
    } catch (error) {
      settle(() => watch.failed(error), runtime);
      throw error;
    }
    // The host gets a promise that settles as respond's own does: a reaction on that one would mark it handled.
    return observedPromise(
      result,
      response => settle(() => watch.answered(response), runtime),
      error => settle(() => watch.failed(error), runtime),
      () => {},
    );
  };
}

/** Runs an observer's step; the observer catches its own errors, this is the last guard before the host. */
function settle(step: () => void, runtime: ServerRuntime): void {
  try {
    step();
  } catch (error) {
    runtime.diag.error('recording a tmcp request failed; this request is not recorded', error);
  }
}
