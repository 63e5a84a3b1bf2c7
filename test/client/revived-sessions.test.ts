/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * src/client/patches/revived-sessions.ts on its own (issue 47: it had only the lab's end-to-end runs): which answer
 * to a sent message is a session the server answered as new, counted once per session id, never for an initialize,
 * with the host's promise settling as the SDK's did. The errors are the SDKs' own classes (1.x StreamableHTTPError,
 * 2.x SdkHttpError) carrying the SDK servers' exact answer; the metrics go through a real ForkwatchInstrumentation.
 */
import { createRequire } from 'node:module';
import { afterEach, describe, expect, test } from 'vitest';
import { isSdkNotInitialized, watchSentMessage } from '../../src/client/patches/revived-sessions';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sampleOne } from '../support/scrape';

const req = createRequire(__filename);
const { StreamableHTTPError } = req('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { SdkHttpError, SdkErrorCode } = req('@modelcontextprotocol/client');

const REVIVED = METRICS.clientRevivedSessions.prometheusName;
/** The body both SDK servers answer a message for a session their transport never initialized with. */
const NOT_INITIALIZED_BODY =
  '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}';
const v1NotInitialized = () => new StreamableHTTPError(400, `Error POSTing to endpoint: ${NOT_INITIALIZED_BODY}`);
// As the 2.4 client throws it for a POST answered 400 (its dist, StreamableHTTPClientTransport._send).
const v2NotInitialized = () =>
  new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${NOT_INITIALIZED_BODY}`, {
    status: 400,
    statusText: 'Bad Request',
    text: NOT_INITIALIZED_BODY,
  });

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

async function revived() {
  const text = await fw!.metrics();
  const reason = (r: string) => sampleOne(text, REVIVED, { transport: 'streamable_http', reason: r });
  return { new_session_id: reason('new_session_id'), not_initialized: reason('not_initialized') };
}

const listTools = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} };

describe('isSdkNotInitialized', () => {
  test("the SDK servers' exact 400, from either SDK's error class; no other status, wording or message", () => {
    expect(isSdkNotInitialized(v1NotInitialized())).toBe(true);
    expect(isSdkNotInitialized(v2NotInitialized())).toBe(true);
    expect(
      isSdkNotInitialized(new StreamableHTTPError(404, `Error POSTing to endpoint: ${NOT_INITIALIZED_BODY}`)),
    ).toBe(false);
    // An auth layer's 4xx that merely says "not initialized" is no session answered as new.
    expect(isSdkNotInitialized(new StreamableHTTPError(400, 'Bad Request: JWT issuer not initialized'))).toBe(false);
    expect(isSdkNotInitialized(new StreamableHTTPError(400, 'Bad Request: Server not initialized yet'))).toBe(false);
    expect(isSdkNotInitialized(new Error(NOT_INITIALIZED_BODY))).toBe(false); // no status
    expect(isSdkNotInitialized(undefined)).toBe(false);
  });
});

describe('watchSentMessage', () => {
  test('a message answered under another session id counts new_session_id, once per session id', async () => {
    fw = setupForkwatch({}, []);
    const state = { revivedCounted: undefined };
    let now = 'session-a';
    const send = (before: string) =>
      watchSentMessage(state, listTools, before, undefined, () => now, Promise.resolve(undefined), fw!.instrumentation);
    // The same id after the answer: nothing.
    await send('session-a');
    await fw.settle();
    expect(await revived()).toEqual({ new_session_id: 0, not_initialized: 0 });
    // The SDK adopted another id from the answer: the session the transport held is gone on the server.
    now = 'session-b';
    await send('session-a');
    // A second message still sent under the lost id (in flight before the adoption): the same revival.
    await send('session-a');
    await fw.settle();
    expect(await revived()).toEqual({ new_session_id: 1, not_initialized: 0 });
    // The new session lost in turn: counted again, for its own id.
    now = 'session-c';
    await send('session-b');
    await fw.settle();
    expect(await revived()).toEqual({ new_session_id: 2, not_initialized: 0 });
  });

  test("the SDK's 400 'Server not initialized' counts not_initialized, and the host's promise rejects with the same error", async () => {
    fw = setupForkwatch({}, []);
    const state = { revivedCounted: undefined };
    for (const error of [v1NotInitialized(), v2NotInitialized()]) {
      const handed = watchSentMessage(
        state,
        listTools,
        'session-a',
        undefined,
        () => 'session-a',
        Promise.reject(error),
        fw.instrumentation,
      );
      await expect(handed).rejects.toBe(error);
    }
    await fw.settle();
    // Two rejections of one session: one revival.
    expect(await revived()).toEqual({ new_session_id: 0, not_initialized: 1 });
  });

  test('an initialize, or a message sent before the transport held a session, is never a revival', async () => {
    fw = setupForkwatch({}, []);
    const state = { revivedCounted: undefined };
    const result = Promise.resolve('answer');
    // No session yet: the SDK's own promise is handed back untouched.
    expect(
      watchSentMessage(state, listTools, undefined, undefined, () => 'session-new', result, fw.instrumentation),
    ).toBe(result);
    // A client that starts over knows it did, whatever the server answers.
    const handed = watchSentMessage(
      state,
      initialize,
      'session-a',
      undefined,
      () => 'session-b',
      result,
      fw.instrumentation,
    );
    expect(handed).toBe(result);
    await expect(
      watchSentMessage(
        state,
        initialize,
        'session-a',
        undefined,
        () => 'session-a',
        Promise.reject(v1NotInitialized()),
        fw.instrumentation,
      ),
    ).rejects.toThrow(/Server not initialized/);
    // Control: the same answer to a tools/list is counted, so the checks above saw the code run.
    await watchSentMessage(state, listTools, 'session-a', undefined, () => 'session-b', result, fw.instrumentation);
    await fw.settle();
    expect(await revived()).toEqual({ new_session_id: 1, not_initialized: 0 });
  });
});
