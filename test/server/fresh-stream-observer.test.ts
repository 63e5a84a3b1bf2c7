/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * src/server/stacks/tmcp/fresh-stream-observer.ts on its own (issue 47: it had only the tmcp stack's end-to-end
 * runs): what one request and its answer tell of a transport that answers every GET with a fresh stream and keeps no
 * session list forkwatch can read. Real web Requests and Responses (the objects tmcp's HttpTransport takes and
 * returns), a real ForkwatchInstrumentation and its spans.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { FreshStreamObserver } from '../../src/server/stacks/tmcp/fresh-stream-observer';
import { METRICS, PROBE_USER_AGENT } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sampleOne } from '../support/scrape';

const RESUMES = METRICS.serverResumes.prometheusName;
const REVIVED = METRICS.serverRevivedSessions.prometheusName;

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

function request(method: string, headers: Record<string, string> = {}) {
  return new Request('http://127.0.0.1/mcp', { method, headers });
}
const answer = (status: number, headers: Record<string, string> = {}) => new Response(null, { status, headers });

/** Sends one request through the observer and hands it the answer, as the tmcp patch does. */
function exchange(observer: FreshStreamObserver, req: Request, res: Response | null) {
  const watch = observer.requestReceived(req);
  watch?.answered(res);
  return watch;
}

async function counted() {
  const text = await fw!.metrics();
  const resume = (outcome: string) => sampleOne(text, RESUMES, { transport: 'streamable_http', outcome });
  return {
    ignored: resume('ignored'),
    rejected: resume('rejected'),
    probe_rejected: resume('probe_rejected'),
    replayed: resume('replayed'),
    revived: sampleOne(text, REVIVED, { state: 'empty' }),
    restored: sampleOne(text, REVIVED, { state: 'restored' }),
  };
}

describe('FreshStreamObserver', () => {
  test('a GET with Last-Event-ID is a resume it cannot honour: 200 ignored, 409 rejected, a probe apart', async () => {
    fw = setupForkwatch({}, []);
    const observer = new FreshStreamObserver({}, fw.instrumentation);
    const issued = { 'mcp-session-id': 'issued-1' };
    exchange(observer, request('POST'), answer(200, issued)); // initialize: the id it issued
    const get = (extra: Record<string, string>) =>
      request('GET', { 'mcp-session-id': 'issued-1', 'last-event-id': 'evt-7', ...extra });
    expect(exchange(observer, get({}), answer(200))?.resume).toBeDefined();
    exchange(observer, get({}), answer(409));
    exchange(observer, get({ 'user-agent': `${PROBE_USER_AGENT}/0.1.0` }), answer(409));
    await fw.waitForSpans('forkwatch.server.resume', 3);
    expect(await counted()).toEqual({
      ignored: 1,
      rejected: 1,
      probe_rejected: 1,
      replayed: 0,
      revived: 0,
      restored: 0,
    });
    // A GET without a cursor is no resume.
    expect(exchange(observer, request('GET', issued), answer(200))?.resume).toBeUndefined();
  });

  test('an id it never held, answered as a live session, is a revived session with nothing restored, once per id', async () => {
    fw = setupForkwatch({}, []);
    const observer = new FreshStreamObserver({}, fw.instrumentation);
    exchange(observer, request('POST'), answer(200, { 'mcp-session-id': 'issued-1' }));
    // Its own session: held, never revived.
    exchange(observer, request('POST', { 'mcp-session-id': 'issued-1' }), answer(200));
    exchange(observer, request('GET', { 'mcp-session-id': 'issued-1' }), answer(200));
    expect((await counted()).revived).toBe(0);
    // A session another process issued (the client's process went away): tmcp answers it as live.
    exchange(observer, request('GET', { 'mcp-session-id': 'lost-9' }), answer(200));
    exchange(observer, request('POST', { 'mcp-session-id': 'lost-9' }), answer(202));
    expect((await counted()).revived).toBe(1);
    // Not answered as live (a 404, a 400, not for the transport's path): nothing.
    exchange(observer, request('POST', { 'mcp-session-id': 'lost-10' }), answer(404));
    exchange(observer, request('POST', { 'mcp-session-id': 'lost-11' }), answer(400));
    exchange(observer, request('POST', { 'mcp-session-id': 'lost-12' }), null);
    expect(await counted()).toEqual({
      ignored: 0,
      rejected: 0,
      probe_rejected: 0,
      replayed: 0,
      revived: 1,
      restored: 0,
    });
  });

  test('a DELETE it answered lets the id go: the same id answered as live again is a revival', async () => {
    fw = setupForkwatch({}, []);
    const observer = new FreshStreamObserver({}, fw.instrumentation);
    exchange(observer, request('POST'), answer(200, { 'mcp-session-id': 'issued-1' }));
    // A DELETE refused keeps it.
    exchange(observer, request('DELETE', { 'mcp-session-id': 'issued-1' }), answer(405));
    exchange(observer, request('POST', { 'mcp-session-id': 'issued-1' }), answer(200));
    expect((await counted()).revived).toBe(0);
    exchange(observer, request('DELETE', { 'mcp-session-id': 'issued-1' }), answer(200));
    exchange(observer, request('POST', { 'mcp-session-id': 'issued-1' }), answer(200));
    expect((await counted()).revived).toBe(1);
  });

  test('protocol 2026-07-28 has no sessions and no resumes: not observed here', async () => {
    fw = setupForkwatch({}, []);
    const observer = new FreshStreamObserver({}, fw.instrumentation);
    const modern = { 'mcp-protocol-version': '2026-07-28', 'mcp-session-id': 'x', 'last-event-id': 'evt-1' };
    expect(observer.requestReceived(request('GET', modern))).toBeUndefined();
    // Control: the same request at 2025-11-25 is a resume and a revival.
    exchange(observer, request('GET', { ...modern, 'mcp-protocol-version': '2025-11-25' }), answer(200));
    await fw.waitForSpans('forkwatch.server.resume', 1);
    expect(await counted()).toMatchObject({ ignored: 1, revived: 1 });
  });
});
