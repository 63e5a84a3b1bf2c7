/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Revived sessions (issue 41), both sides, in the lab: real SDK clients (1.32.2, 2.4) against real SDK servers (1.32.2,
 * 2.x) whose app revives a session it lost instead of answering 404 (lab/revived/servers.mjs), beside the spec's 404.
 * The replica is "replaced" (every transport dropped, the registry of ids kept) while the client holds its session.
 */
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { startReviveServer } from '../../lab/revived/servers.mjs';
// @ts-expect-error: plain ESM module without types
import { LabEventStore } from '../../lab/event-store.mjs';
import { METRICS } from '../../src/shared/names';
import { sample } from '../support/lab';
import { CLIENTS, SERVERS, labScenarios, until } from './support';

const clientRevived = METRICS.clientRevivedSessions.prometheusName;
const serverRevived = METRICS.serverRevivedSessions.prometheusName;
const t = { transport: 'streamable_http' };

const labs = labScenarios(startReviveServer);
const fw = labs.forkwatch;

async function scenario(server: (typeof SERVERS)[number], client: (typeof CLIENTS)[number], options: object) {
  const started = await labs.start(server, client, options);
  await started.session.client.listTools();
  return started;
}

const revivedOnClient = async (reason: string) => sample(await fw().metrics(), clientRevived, { ...t, reason });
const revivedOnServer = async (state: string) => sample(await fw().metrics(), serverRevived, { state });

describe.each(SERVERS)('$label', server => {
  describe.each(CLIENTS)('$label', client => {
    test('the spec control: a lost session is 404, and nothing is counted revived on either side', async () => {
      const { lab, session } = await scenario(server, client, { unknown: 'spec' });
      await lab.restart();
      await expect(session.client.listTools()).rejects.toThrow();
      await until(() => lab.truth.notFound >= 1, 'the 404');
      await fw().settle();
      for (const reason of ['new_session_id', 'not_initialized']) expect(await revivedOnClient(reason)).toBe(0);
      for (const state of ['restored', 'empty']) expect(await revivedOnServer(state)).toBe(0);
    });

    test('a healthy session served by the process that holds it: nothing revived', async () => {
      const { lab, session } = await scenario(server, client, { unknown: 'hydrate' });
      for (let i = 0; i < 5; i++) await session.client.listTools();
      await lab.notifyAll(1);
      await fw().settle();
      expect(lab.truth.initialized).toBe(1);
      for (const reason of ['new_session_id', 'not_initialized']) expect(await revivedOnClient(reason)).toBe(0);
      for (const state of ['restored', 'empty']) expect(await revivedOnServer(state)).toBe(0);
    });

    test("hydration with a fresh store (the SDK's multi-node pattern, nothing to restore): the server counts it empty", async () => {
      const { lab, session } = await scenario(server, client, { unknown: 'hydrate' });
      await lab.restart();
      await session.client.listTools();
      expect(lab.truth.hydrated).toBe(1);
      await until(async () => (await revivedOnServer('empty')) === 1, 'the revived session counted');
      expect(await revivedOnServer('restored')).toBe(0);
      // Same id, 200: nothing the client can see, but nothing it could mistake either.
      for (const reason of ['new_session_id', 'not_initialized']) expect(await revivedOnClient(reason)).toBe(0);
    });

    test('hydration with a shared store the client resumes from: the server counts it restored', async () => {
      const sharedStore = new LabEventStore({ idFormat: 'sdk', unknownCursor: 'validate' });
      const { lab, session } = await scenario(server, client, { unknown: 'hydrate', sharedStore });
      // The client's standalone stream gets an event, so its reconnect after the restart carries a cursor.
      await until(async () => {
        await lab.notifyAll(1);
        return sharedStore.events.length > 0;
      }, 'a stored notification');
      await fw().settle();
      // One more event stored while the client is away: its resume replays it.
      const { streamId } = sharedStore.events.at(-1);
      await sharedStore.storeEvent(streamId, {
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'info', data: 'while away' },
      });
      await lab.restart();
      await until(async () => (await revivedOnServer('restored')) === 1, 'the restored session counted');
      expect(await revivedOnServer('empty')).toBe(0);
      await session.client.listTools();
    });

    test('hydration with a shared store whose resume replays 0 events: nothing proven restored, the server counts it empty', async () => {
      const sharedStore = new LabEventStore({ idFormat: 'sdk', unknownCursor: 'validate' });
      const { lab, session } = await scenario(server, client, { unknown: 'hydrate', sharedStore });
      await until(async () => {
        await lab.notifyAll(1);
        return sharedStore.events.length > 0;
      }, 'a stored notification');
      await fw().settle();
      // Nothing stored after the client's cursor: the store knows it and replays nothing (issue 51: this was restored).
      await lab.restart();
      await until(async () => (await revivedOnServer('empty')) === 1, 'the revived session counted');
      expect(await revivedOnServer('restored')).toBe(0);
      await session.client.listTools();
    });

    test('a transport created for the id but not hydrated: the SDK answers "Server not initialized", the client counts it', async () => {
      const { lab, session } = await scenario(server, client, { unknown: 'uninitialized' });
      await lab.restart();
      await expect(session.client.listTools()).rejects.toThrow(/not initialized/i);
      await until(async () => (await revivedOnClient('not_initialized')) === 1, 'the client count');
      // Another request of the same session is the same revival, counted once.
      await expect(session.client.listTools()).rejects.toThrow();
      await fw().settle();
      expect(await revivedOnClient('not_initialized')).toBe(1);
      expect(await revivedOnClient('new_session_id')).toBe(0);
      // The transport refused the session: not revived on the server.
      for (const state of ['restored', 'empty']) expect(await revivedOnServer(state)).toBe(0);
    });
  });
});

// The 1.x client adopts a session id it is answered with silently. The 2.4 client adopts one from the initialize
// answer only: it keeps sending the old one, and the reissuing app makes a new session of every request (the class
// patch sees no response headers; left, see the runbook): the test below pins what is counted then.
const ADOPTING = CLIENTS.filter(client => client.label.includes('1.32'));
const KEEPING = CLIENTS.filter(client => !ADOPTING.includes(client));

describe.each(SERVERS)('$label', server => {
  describe.each(ADOPTING)('$label', client => {
    test('a fresh session under a new id for the lost one: the client counts new_session_id, the server empty', async () => {
      const { lab, session } = await scenario(server, client, { unknown: 'reissue' });
      const before = session.transport.sessionId;
      await lab.restart();
      await session.client.listTools();
      expect(lab.truth.reissued).toBe(1);
      expect(session.transport.sessionId).not.toBe(before); // the SDK adopted the new id silently
      await until(async () => (await revivedOnClient('new_session_id')) === 1, 'the client count');
      expect(await revivedOnClient('not_initialized')).toBe(0);
      // The standalone stream's reconnect (no cursor: nothing to restore) decides the state on the server.
      await until(async () => (await revivedOnServer('empty')) === 1, 'the server count');
      expect(await revivedOnServer('restored')).toBe(0);
    });
  });

  describe.each(KEEPING)('$label', client => {
    test('a fresh session under a new id for each request of a client that keeps the old id: the known blind spot, nothing restored', async () => {
      const { lab, session } = await scenario(server, client, { unknown: 'reissue' });
      const before = session.transport.sessionId;
      await lab.restart();
      await session.client.listTools();
      await session.client.listTools();
      await fw().settle();
      // Ground truth: the client kept the lost id, so each request was a new session of the app's.
      expect(session.transport.sessionId).toBe(before);
      expect(lab.truth.reissued).toBeGreaterThanOrEqual(2);
      // The client's view stays blind to it (no new id adopted, no error): if forkwatch learns to see it, this says so.
      for (const reason of ['new_session_id', 'not_initialized']) expect(await revivedOnClient(reason)).toBe(0);
      expect(await revivedOnServer('restored')).toBe(0);
    });
  });
});
