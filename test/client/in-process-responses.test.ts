/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * Where the wire observer reads a Response through its body record (Node 22's undici 6: shared/response-body.ts), a
 * Response made in process (a transport's own fetch answering from an in-process handler, the SDK's e2e harness, a
 * test double) has a default stream for its body, not undici's byte stream. Its chunks may still be held by someone
 * else: the other branch of the tee `Response.clone()` makes (a logging fetch keeps that clone), or a producer that
 * enqueues one buffer twice. The app and those holders must read exactly what they read without forkwatch.
 *
 * Before the pass-through took the source's kind, it was always a byte stream, whose enqueue transfers each chunk's
 * buffer: the clone of a streamed 2026-07-28 response read back empty (the SDK's e2e scenarios
 * hosting-entry-streaming, on Node 22 only: docs/host-suite.md), and a reused buffer broke the app's read.
 *
 * Both observers that swap a body (per-request POST, session GET) are run with undici 6's Response on every runtime
 * (test/sdk-versions/undici6), and with the runtime's own Response where that is undici 6 (Node 22).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { observePerRequestPost, perRequestPostOf } from '../../src/client/wire/per-request-exchange';
import { observeSessionGet } from '../../src/client/wire/fetch-session-get';
import { sseGetOf } from '../../src/client/wire/session-get-request';
import { METRICS } from '../../src/shared/names';
import { type Forkwatch, setupForkwatch } from '../support/forkwatch';
import { sampleOne } from '../support/scrape';

type ResponseClass = typeof Response;
const undici6 = require(join(__dirname, '../sdk-versions/undici6/node_modules/undici')) as { Response: ResponseClass };
const responseClasses: [string, ResponseClass][] = [['undici 6 Response', undici6.Response]];
if (Number(process.versions.undici?.split('.')[0]) === 6) responseClasses.push(["the runtime's Response", Response]);

let fw: Forkwatch | undefined;
afterEach(async () => {
  await fw?.teardown();
  fw = undefined;
});

const encoder = new TextEncoder();
const URL_ = 'http://in-process/mcp';

/** A default stream as an in-process server writes one: frames, an empty chunk, and one buffer enqueued twice. */
function sseSource(frames: string[]): ReadableStream<Uint8Array> {
  const ping = encoder.encode(': ping\n\n');
  const chunks = [ping, new Uint8Array(0), ...frames.map(f => encoder.encode(f)), ping];
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(next);
    },
  });
}

interface Seen {
  /** Each chunk's length, as the app's reader got them. */
  chunks: number[];
  text: string;
  clone: string;
}

/** What the app reads of the Response its fetch returned, and what the clone its fetch kept reads afterwards. */
async function readBoth(response: Response, clone: Response): Promise<Seen> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: number[] = [];
  let text = '';
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value.byteLength);
    text += decoder.decode(value, { stream: true });
  }
  return { chunks, text, clone: await clone.text() };
}

/** A transport's own fetch answering in process, keeping a clone of each Response as a logging fetch does. */
function inProcessFetch(ResponseClass: ResponseClass, frames: string[], kept: Response[]) {
  return async () => {
    const response = new ResponseClass(sseSource(frames), { headers: { 'content-type': 'text/event-stream' } });
    kept.push(response.clone());
    return response;
  };
}

const EXCHANGE = [
  'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"first"}}\n\n',
  'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n',
];
const RESUMED = ['id: 4\ndata: {"jsonrpc":"2.0","method":"notifications/message"}\n\n', 'id: 5\ndata: {}\n\n'];

describe.each(responseClasses)('%s with a default-stream body', (_, ResponseClass) => {
  test('a protocol 2026-07-28 POST: the app and the kept clone read every chunk, as bare', async () => {
    const bareKept: Response[] = [];
    const bare = await readBoth(await inProcessFetch(ResponseClass, EXCHANGE, bareKept)(), bareKept[0]!);
    expect(bare.chunks).toEqual([8, 0, EXCHANGE[0]!.length, EXCHANGE[1]!.length, 8]);
    expect(bare.clone).toBe(bare.text);

    fw = setupForkwatch({}, []);
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'chatty', arguments: {} } }),
    };
    const post = perRequestPostOf(URL_, init);
    expect(post).toBeDefined();
    const kept: Response[] = [];
    const own = inProcessFetch(ResponseClass, EXCHANGE, kept);
    const response = (await observePerRequestPost(own, undefined, URL_, init, post!, fw.instrumentation)) as Response;
    expect(await readBoth(response, kept[0]!)).toEqual(bare);
    // The observer did read the stream it handed on: the exchange completed on its terminal response.
    expect(sampleOne(await fw.metrics(), METRICS.clientExchanges.prometheusName, { outcome: 'completed' })).toBe(1);
  });

  test('a session GET resumed with Last-Event-ID: the app and the kept clone read every chunk, as bare', async () => {
    const bareKept: Response[] = [];
    const bare = await readBoth(await inProcessFetch(ResponseClass, RESUMED, bareKept)(), bareKept[0]!);
    expect(bare.clone).toBe(bare.text);

    fw = setupForkwatch({}, []);
    const init = {
      headers: {
        accept: 'text/event-stream',
        'mcp-session-id': 's-in-process',
        'mcp-protocol-version': '2025-11-25',
        'last-event-id': '3',
      },
    };
    const get = sseGetOf(URL_, init);
    expect(get).toMatchObject({ cursor: '3' });
    const kept: Response[] = [];
    const own = inProcessFetch(ResponseClass, RESUMED, kept);
    const response = (await observeSessionGet(own, undefined, URL_, init, get!, fw.instrumentation)) as Response;
    expect(await readBoth(response, kept[0]!)).toEqual(bare);
    // The resume was judged from the frames forkwatch read on the way: id 4 continues cursor 3.
    expect(
      sampleOne(await fw.metrics(), METRICS.clientResumes.prometheusName, {
        transport: 'streamable_http',
        outcome: 'resumed',
      }),
    ).toBe(1);
  });
});
