/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * tmcp's HTTP transport (@tmcp/transport-http 0.9, ESM only): one `HttpTransport` serves every session of its
 * server, `respond(Request) → Response`. It has no event store and ignores Last-Event-ID: every GET gets a fresh
 * stream. The patch (patch.ts) hands each request and its answer to the transport's observer
 * (fresh-stream-observer.ts), which keeps the session ids the transport holds (held-sessions.ts) and, once the
 * transport's construction showed its server (construction.ts), each session's standalone stream and the broadcasts
 * it got or missed (standalone-streams.ts): the delivery facts every stack hands the ledger (server/stack.ts).
 */
import type { ServerStack } from '../../stack';
import { watchTmcpConstruction } from './construction';
import { TMCP_HTTP_TRANSPORT_METHODS, patchTmcpHttpTransport } from './patch';

export const stack: ServerStack = {
  patches: {
    HttpTransport: {
      methods: TMCP_HTTP_TRANSPORT_METHODS,
      patch: patchTmcpHttpTransport,
      watchConstruction: watchTmcpConstruction,
    },
  },
};
