/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Reconnects after a request was answered with a JSON-RPC error. The SDK 1.32.2 client marks a request stream
 * answered only by a result: after an error response on a stream with an event id (the 2.x server's priming event) it
 * resumes the stream, retries, and reconnects without a cursor, every time (the 2.4 client does not). Nothing of an
 * answered request can be lost: none of it is a resume attempt or an empty reconnect (it was `inconclusive` 1,
 * `rejected_stream_held` 2 and `dropped_after_empty` 1 per error: a ReconnectStorm warning at 0.5 errors a second).
 * Beside it, a request stream cut before its answer is still a resume judged as before. Real SDK clients and servers
 * on 127.0.0.1 (lab/revived/servers.mjs); the lab's McpServer has no tool named `missing`.
 */
import { describe, expect, test } from 'vitest';
// @ts-expect-error: plain ESM module without types
import { startStreamServer } from '../../lab/revived/servers.mjs';
import { METRICS } from '../../src/shared/names';
import { CLIENTS, SERVERS, labScenarios, sleep, until } from './support';

const labs = labScenarios(startStreamServer);
const ERRORS = 3;

/** Every sample of a family, summed over its series. */
function total(text: string, family: string): number {
  return text
    .split('\n')
    .filter(line => line.startsWith(`${family}{`) || line.startsWith(`${family} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describe.each(SERVERS)('$label', server => {
  describe.each(CLIENTS)('$label', client => {
    // The pair whose client resumes answered streams: the ground truth below says it did.
    const resumesAnswered = server.label.includes('server 2') && client.label.includes('sdk 1.32.2');

    test(`${ERRORS} calls of a tool the server lacks: whatever the client reconnects, no resume and no empty reconnect counted`, async () => {
      const { lab, session } = await labs.start(server, client, { streams: 'quiet' });
      await until(() => lab.truth.gets >= 1, 'the standalone GET');
      for (let i = 0; i < ERRORS; i++) {
        // The 2.x server answers a JSON-RPC error; the 1.32.2 server a result with isError (no reconnect follows).
        await session.client.callTool({ name: 'missing', arguments: {} }).catch(() => undefined);
      }
      if (resumesAnswered) await until(() => lab.truth.resumes >= ERRORS, 'the client resuming each answered stream');
      // Longer than the client's reconnection delays: every reconnect after an error has gone out.
      await sleep(1_000);
      const text = await labs.forkwatch().metrics();
      // Ground truth: the SDK resumed each answered stream (200 GETs with Last-Event-ID at the server), or none.
      expect(lab.truth.resumes).toBe(resumesAnswered ? ERRORS : 0);
      expect(lab.truth.notifications).toBe(0);
      expect(total(text, METRICS.clientResumes.prometheusName)).toBe(0);
      expect(total(text, METRICS.clientEmptyReconnects.prometheusName)).toBe(0);
      expect(total(text, METRICS.clientForks.prometheusName)).toBe(0);
    });

    test('the control: a request stream the server cuts before its answer is resumed, and judged as ever', async () => {
      const { lab, session } = await labs.start(server, client, { streams: 'quiet' });
      await until(() => lab.truth.gets >= 1, 'the standalone GET');
      const result = await session.client.callTool({ name: 'cut', arguments: {} });
      // Ground truth: the answer came after the cut, through a resume of the request's stream.
      expect(result.content[0].text).toBe('after the cut');
      expect(lab.truth.resumes).toBe(1);
      const text = await labs.forkwatch().metrics();
      const resumed = total(text, METRICS.clientResumes.prometheusName);
      expect(resumed).toBe(1);
      expect(text).toMatch(/forkwatch_client_resumes_total\{[^}]*outcome="resumed"[^}]*\} 1/);
    });
  });
});
