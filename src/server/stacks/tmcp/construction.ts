/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * tmcp's `HttpTransport` keeps the McpServer it serves in a `#private` field, and writes the server's broadcasts to
 * its sessions' GET streams from a listener it adds in its constructor. forkwatch watches the construction to see
 * that server, as for @hono/mcp's event store: the module's export is replaced by a `Proxy` of the class whose
 * `construct` trap constructs the class itself with the caller's own arguments, untouched, then adds one listener of
 * its own to the server's `broadcast` event (after the transport's: tmcp has written a broadcast when it runs). The
 * listener only reads what was broadcast and hands it to the transport's standalone streams
 * (standalone-streams.ts); it never throws (a listener's throw would reach the process) and does nothing once
 * forkwatch is disabled or the class unpatched. The stand-in answers as the class (shared/class-stand-in.ts).
 *
 * A transport given a stream session manager of the app's own (`sessionManager.streams`: Redis, …) is not watched:
 * such a manager may write a broadcast to streams on other processes, so what reached a session is not this
 * process's to say.
 */
import { isWrapped } from '@opentelemetry/instrumentation';
import { classStandIn } from '../../../shared/class-stand-in';
import type { ServerRuntime } from '../../server-runtime';
import { freshStreamObserverOf } from './fresh-stream-observer';
import type { BroadcastDetail } from './standalone-streams';

interface McpServerLike {
  on(event: 'broadcast', listener: (detail: BroadcastDetail | undefined) => void): unknown;
}

/** The stand-in for the exported class: constructs the class itself, then watches its server's broadcasts. */
export function watchTmcpConstruction<T extends object>(cls: T, runtime: ServerRuntime): T {
  return classStandIn(cls, (target, args, as) => {
    const transport = Reflect.construct(target, args, as);
    if (runtime.enabled) watchBroadcasts(transport, args, runtime);
    return transport;
  });
}

/** `new HttpTransport(server, options)` returned `transport`: its server's broadcasts go to its observer too. */
function watchBroadcasts(transport: object, args: unknown[], runtime: ServerRuntime): void {
  try {
    const [server, options] = args;
    if ((options as { sessionManager?: { streams?: unknown } } | undefined)?.sessionManager?.streams !== undefined) {
      runtime.diag.debug('a tmcp transport with its own stream session manager: its deliveries are not recorded');
      return;
    }
    if (typeof (server as Partial<McpServerLike> | null | undefined)?.on !== 'function') return;
    const observer = freshStreamObserverOf(transport, runtime);
    const streams = observer.watchStreams();
    (server as McpServerLike).on('broadcast', detail => {
      try {
        const { runtime } = observer;
        if (!runtime.enabled || !isWrapped((transport as { respond?: unknown }).respond)) return;
        streams.broadcast(detail);
      } catch (error) {
        observer.runtime.diag.error('recording a tmcp broadcast failed; it is not recorded', error);
      }
    });
  } catch (error) {
    runtime.diag.error(
      "watching a tmcp server's broadcasts failed; this transport's deliveries are not recorded",
      error,
    );
  }
}
