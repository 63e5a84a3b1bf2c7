/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Patches of the @modelcontextprotocol/server 2.x per-request path (protocol 2026-07-28). They only hand facts to
 * the observer (observer.ts); arguments, return values and promises pass through unchanged, and nothing
 * here throws into the SDK.
 *
 * - `PerRequestHTTPServerTransport` (one transport per exchange; `createMcpHandler` builds one per modern POST):
 *   `handleMessage(message, extra)` starts the exchange; `close()` ends it, and reads `_terminalDelivered`,
 *   `_deferredResponse.settled` and `_sse` first (closed before any response: createMcpHandler answers 499);
 *   `send()` on a closed transport is a late write the SDK drops (`if (this._closed) return`).
 * - `Server._wrapHandler(method, handler)` (the 2.x hook every registered request handler passes through): the
 *   handler's promise tells whether it finished after its exchange closed. The Protocol drops that response before
 *   it reaches the transport (`if (abortController.signal.aborted) return`), so this is the only place it shows.
 *   `_notificationViaCodec` after the exchange closed throws "Not connected" to the handler: a late notification.
 * - `McpServer.registerTool(name, config)`: the tool's `idempotentHint`, for the duplicate-execution risk.
 * - `InMemoryServerEventBus.publish(event)`: whether any listen stream on this process was subscribed.
 *
 * As in the SDK's session transport patch (stacks/sdk/patch.ts): each class has its method list and a table keyed by method of short named
 * wrapper factories, and every wrapper only hands what it saw to the one observer.
 */
import type { Wrap } from '../../../shared/internal-types';
import type { ForkwatchRuntime } from '../../../shared/runtime';
import { type AbortSignalLike, type PerRequestTransportState, perRequestServerOf } from './observer';

type Method = (this: unknown, ...args: unknown[]) => unknown;
type Proto = Record<string, Method>;
/** A method's wrapper, made from the original. */
type Wrapper = (original: Method, runtime: ForkwatchRuntime) => Method;
type WrapperTable<T extends readonly string[]> = Readonly<Record<T[number], Wrapper>>;

export const PER_REQUEST_TRANSPORT_METHODS = ['handleMessage', 'send', 'close'] as const;
export const SERVER_HANDLER_METHODS = ['_wrapHandler', '_notificationViaCodec'] as const;
export const MCP_SERVER_METHODS = ['registerTool'] as const;
export const EVENT_BUS_METHODS = ['publish'] as const;

export function patchPerRequestTransport(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void {
  patchMethods(proto, runtime, wrap, PER_REQUEST_TRANSPORT_METHODS, PER_REQUEST_TRANSPORT_WRAPPERS);
}

/** Not the 2.x Server (no `_wrapHandler` hook): left alone. */
export function describeNonHookServer(proto: { _wrapHandler?: unknown } | undefined): string | undefined {
  return typeof proto?._wrapHandler === 'function'
    ? undefined
    : 'no _wrapHandler hook (not @modelcontextprotocol/server 2.x)';
}

export function patchServerHandlers(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void {
  patchMethods(proto, runtime, wrap, SERVER_HANDLER_METHODS, SERVER_HANDLER_WRAPPERS);
}

export function patchMcpServerTools(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void {
  patchMethods(proto, runtime, wrap, MCP_SERVER_METHODS, MCP_SERVER_WRAPPERS);
}

export function patchEventBus(proto: object, runtime: ForkwatchRuntime, wrap: Wrap): void {
  patchMethods(proto, runtime, wrap, EVENT_BUS_METHODS, EVENT_BUS_WRAPPERS);
}

/** Every method of the list, wrapped by its factory in the table. */
function patchMethods<T extends readonly string[]>(
  proto: object,
  runtime: ForkwatchRuntime,
  wrap: Wrap,
  methods: T,
  wrappers: WrapperTable<T>,
): void {
  // `wrap` for the untyped classes of the 2.x server package: a method by name, its wrapper from the original.
  const w = wrap as unknown as (target: Proto, name: string, wrapper: (original: Method) => Method) => void;
  for (const method of methods as readonly T[number][]) {
    w(proto as Proto, method, original => wrappers[method](original, runtime));
  }
}

const PER_REQUEST_TRANSPORT_WRAPPERS: WrapperTable<typeof PER_REQUEST_TRANSPORT_METHODS> = {
  handleMessage: wrapHandleMessage,
  send: wrapSend,
  close: wrapClose,
};
const SERVER_HANDLER_WRAPPERS: WrapperTable<typeof SERVER_HANDLER_METHODS> = {
  _wrapHandler: wrapHandlerHook,
  _notificationViaCodec: wrapNotificationViaCodec,
};
const MCP_SERVER_WRAPPERS: WrapperTable<typeof MCP_SERVER_METHODS> = { registerTool: wrapRegisterTool };
const EVENT_BUS_WRAPPERS: WrapperTable<typeof EVENT_BUS_METHODS> = { publish: wrapPublish };

function guarded(runtime: ForkwatchRuntime, what: string, fn: () => void): void {
  if (!runtime.enabled) return;
  try {
    fn();
  } catch (error) {
    runtime.diag.error(`${what} failed; not recorded`, error);
  }
}

/** The exchange starts: the first request a transport handles. */
function wrapHandleMessage(original: Method, runtime: ForkwatchRuntime): Method {
  return function handleMessage(this: unknown, message: unknown, extra: unknown) {
    guarded(runtime, 'starting a per-request exchange', () => {
      if ((this as { _used?: unknown })._used === true) return;
      const authInfo = (extra as { authInfo?: unknown } | undefined)?.authInfo;
      perRequestServerOf(runtime).exchangeStarted(this as object, message, authInfo);
    });
    return original.call(this, message, extra);
  };
}

/** The exchange ends: its state is read before the SDK closes it. */
function wrapClose(original: Method, runtime: ForkwatchRuntime): Method {
  return function close(this: unknown) {
    guarded(runtime, 'ending a per-request exchange', () => {
      const self = this as PerRequestTransportState & { _closed?: unknown };
      if (self._closed !== true) perRequestServerOf(runtime).exchangeClosing(this as object, self);
    });
    return original.call(this);
  };
}

/** A send on a closed transport: a late write the SDK drops. */
function wrapSend(original: Method, runtime: ForkwatchRuntime): Method {
  return function send(this: unknown, message: unknown, options: unknown) {
    if ((this as { _closed?: unknown })._closed === true) {
      guarded(runtime, 'recording a late write', () => perRequestServerOf(runtime).lateSend(this as object, message));
    }
    return original.call(this, message, options);
  };
}

/** Every registered request handler: whether it settled after its exchange closed. */
function wrapHandlerHook(original: Method, runtime: ForkwatchRuntime): Method {
  return function _wrapHandler(this: unknown, method: unknown, handler: unknown) {
    const wrapped = original.call(this, method, handler);
    if (typeof wrapped !== 'function') return wrapped;
    const server = this as { transport?: unknown };
    return function observedHandler(this: unknown, request: unknown, ctx: unknown) {
      if (!runtime.enabled) return wrapped.call(this, request, ctx);
      let exchange: ReturnType<ReturnType<typeof perRequestServerOf>['exchangeOf']>;
      let observer: ReturnType<typeof perRequestServerOf> | undefined;
      try {
        observer = perRequestServerOf(runtime);
        exchange = observer.exchangeOf(server.transport);
        if (exchange) observer.servedPerRequest(server);
      } catch (error) {
        runtime.diag.error('looking up a per-request exchange failed; this handler is not observed', error);
      }
      const result = wrapped.call(this, request, ctx);
      if (!exchange || !observer || typeof (result as Promise<unknown>)?.then !== 'function') return result;
      const seen = exchange;
      const obs = observer;
      const signal = (ctx as { mcpReq?: { signal?: AbortSignalLike } } | undefined)?.mcpReq?.signal;
      // A derived promise: the SDK's own handlers on `result` are untouched, and a rejection is handled here too.
      (result as Promise<unknown>).then(
        value => guarded(runtime, 'recording a handler result', () => obs.handlerResolved(seen, value, signal)),
        error => guarded(runtime, 'recording a handler error', () => obs.handlerRejected(seen, error, signal)),
      );
      return result;
    };
  };
}

/** A notification for a request whose exchange is over (the server's `_transport` is gone). */
function wrapNotificationViaCodec(original: Method, runtime: ForkwatchRuntime): Method {
  return function _notificationViaCodec(this: unknown, codec: unknown, notification: unknown, options: unknown) {
    const self = this as { _transport?: unknown };
    if (self._transport === undefined && (options as { relatedRequestId?: unknown })?.relatedRequestId !== undefined) {
      guarded(runtime, 'recording a late notification', () =>
        perRequestServerOf(runtime).lateNotification(this as object),
      );
    }
    return original.call(this, codec, notification, options);
  };
}

/** A tool's annotations, for the duplicate-execution risk. */
function wrapRegisterTool(original: Method, runtime: ForkwatchRuntime): Method {
  return function registerTool(this: unknown, ...args: unknown[]) {
    guarded(runtime, 'reading tool annotations', () => perRequestServerOf(runtime).toolRegistered(args[0], args[1]));
    return original.apply(this, args);
  };
}

/** A published event: whether any listen stream on this process was subscribed. */
function wrapPublish(original: Method, runtime: ForkwatchRuntime): Method {
  return function publish(this: unknown, event: unknown) {
    guarded(runtime, 'recording a publish', () => {
      const listeners = (this as { _listeners?: { size?: unknown } })._listeners?.size;
      perRequestServerOf(runtime).published(typeof listeners === 'number' ? listeners : undefined);
    });
    return original.call(this, event);
  };
}
