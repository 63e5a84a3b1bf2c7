/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patch of @hono/mcp's `StreamableHTTPTransport` (0.3: a Hono context in, a Response out; ESM and CommonJS builds).
 * The wrappers, one per method in a table, only hand what they saw to the session's observer
 * (session-observer.ts): `handleRequest` every request, `handleGetRequest` a GET and its answer, `send` every
 * event, `close` the end of the session. The context, the Response and the messages are only read. The event store is
 * watched from the transport's construction (event-store.ts); a GET with Last-Event-ID is a resume, concluded
 * from its answer and its replay (resume.ts).
 */
import { observedPromise } from '../../../shared/observed-promise';
import type { ServerRuntime } from '../../server-runtime';
import type { SdkMethod, Wrap } from '../../../shared/internal-types';
import { type HonoContextLike, honoSessionObserverOf } from './session-observer';

export const HONO_TRANSPORT_METHODS = ['handleRequest', 'handleGetRequest', 'send', 'close'] as const;

type HonoMethod = (typeof HONO_TRANSPORT_METHODS)[number];
interface HonoTransportLike {
  handleRequest(...args: unknown[]): unknown;
}
type Method = SdkMethod<HonoTransportLike>;

export function patchHonoStreamableHttp(proto: object, runtime: ServerRuntime, wrap: Wrap): void {
  for (const method of HONO_TRANSPORT_METHODS) {
    wrap(proto, method, original => HONO_WRAPPERS[method](original as Method, runtime) as typeof original);
  }
}

const HONO_WRAPPERS: Readonly<Record<HonoMethod, (original: Method, runtime: ServerRuntime) => Method>> = {
  handleRequest: (original, runtime) =>
    function handleRequest(this: HonoTransportLike, ctx?: unknown, ...rest: unknown[]) {
      if (runtime.enabled) honoSessionObserverOf(this, runtime).requestReceived(ctx as HonoContextLike | undefined);
      return original.call(this, ctx, ...rest);
    },
  handleGetRequest: (original, runtime) =>
    function handleGetRequest(this: HonoTransportLike, ctx?: unknown, ...rest: unknown[]) {
      if (!runtime.enabled) return original.call(this, ctx, ...rest);
      const observer = honoSessionObserverOf(this, runtime);
      const answered = observer.getReceived(ctx as HonoContextLike | undefined);
      const resume = observer.beginResume(ctx as HonoContextLike | undefined);
      let result: unknown;
      try {
        result = original.call(this, ctx, ...rest);
      } catch (error) {
        resume?.refused(error);
        throw error;
      }
      // A resume's connection carries the standalone stream only if its replay resolved to it (resume.ts).
      // Hono gets a promise that settles as the handler's own does (shared/observed-promise.ts).
      if (resume)
        return observedPromise(
          result,
          r => resume.answered(r, answered),
          e => resume.refused(e),
          error => runtime.diag.error('recording an @hono/mcp resume failed', error),
        );
      if (answered)
        return observedPromise(
          result,
          answered,
          () => {},
          error => runtime.diag.error('watching an @hono/mcp GET failed', error),
        );
      return result;
    },
  send: (original, runtime) =>
    function send(this: HonoTransportLike, message?: unknown, options?: unknown, ...rest: unknown[]) {
      if (runtime.enabled) honoSessionObserverOf(this, runtime).sent(message, options);
      return original.call(this, message, options, ...rest);
    },
  close: (original, runtime) =>
    function close(this: HonoTransportLike, ...args: unknown[]) {
      const result = original.apply(this, args);
      if (runtime.enabled) honoSessionObserverOf(this, runtime).closed();
      return result;
    },
};
