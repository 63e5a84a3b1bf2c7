/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A session the client ends (issue 50): the client ledger keeps a session's record for as long as it may be resumed
 * (30 minutes by default), and for a short session that record was most of what forkwatch kept of it. A DELETE the
 * server answers 2xx ends the session: its record goes at once. A client that only closes its transport may resume
 * the session from another one: its record stays. Real SDK clients (1.32.2, 2.4) against real SDK servers (1.32.2,
 * 2.x) on 127.0.0.1; the DELETE is seen on the wire (undici's channels on Node 24 and 26, the fetch wrapper on 22).
 */
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { startStreamServer } from '../../lab/revived/servers.mjs';
import { sessionEnded } from '../../src/client/wire/session-get-request';
import { setupForkwatch } from '../support/forkwatch';
import { CLIENTS, SERVERS, connect, labScenarios, until } from './support';

const labs = labScenarios(startStreamServer);

describe.each(SERVERS)('$label', server => {
  describe.each(CLIENTS)('$label', client => {
    test('a session ended with DELETE leaves the ledger; one only closed stays for a resume', async () => {
      const { lab, session } = await labs.start(server, client, { streams: 'quiet' });
      const ledger = labs.forkwatch().instrumentation.clientLedger;
      const closedOnly = await connect(client, lab.url);
      await until(() => lab.truth.gets >= 2, 'both standalone GETs answered');
      const ended = session.transport.sessionId as string;
      const kept = closedOnly.transport.sessionId as string;
      await until(() => ledger.peek(ended) !== undefined && ledger.peek(kept) !== undefined, 'both sessions tracked');

      await session.transport.terminateSession();
      await until(() => ledger.peek(ended) === undefined, 'the ended session forgotten');
      await closedOnly.client.close();
      // Ground truth: the DELETE reached the server (the SDK dropped the id only after its 2xx).
      expect(session.transport.sessionId).toBeUndefined();
      expect(ledger.peek(kept)).toBeDefined();
      expect(ledger.size).toBe(1);
    });
  });
});

describe('sessionEnded', () => {
  test('only a 2xx ends the session: a refused, unknown or failed DELETE keeps the record', () => {
    const fw = setupForkwatch({}, []);
    try {
      const ledger = fw.instrumentation.clientLedger;
      for (const status of [undefined, 404, 405, 500, 302]) {
        ledger.touch('s', 0);
        sessionEnded(fw.instrumentation, 's', status);
        expect(ledger.peek('s'), String(status)).toBeDefined();
      }
      sessionEnded(fw.instrumentation, 's', 204);
      expect(ledger.peek('s')).toBeUndefined();
      ledger.touch('s', 0);
      sessionEnded(fw.instrumentation, 's', 200);
      expect(ledger.peek('s')).toBeUndefined();
    } finally {
      void fw.teardown();
    }
  });
});
