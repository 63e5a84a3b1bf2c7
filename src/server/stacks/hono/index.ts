/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @hono/mcp 0.3: its own `StreamableHTTPTransport`, a port of the SDK's (a Hono context in, a Response out; every
 * field `#private`), one instance per session. The patch (patch.ts) wraps four methods and hands what they see to the
 * session's observer (session-observer.ts); the event store, out of reach in a private field, is watched from the
 * transport's construction (event-store.ts), and each resume is concluded from its answer and its replay
 * (resume.ts).
 */
import type { ServerStack } from '../../stack';
import { watchHonoConstruction } from './event-store';
import { HONO_TRANSPORT_METHODS, patchHonoStreamableHttp } from './patch';

export const stack: ServerStack = {
  patches: {
    StreamableHTTPTransport: {
      methods: HONO_TRANSPORT_METHODS,
      patch: patchHonoStreamableHttp,
      watchConstruction: watchHonoConstruction,
    },
  },
};
