/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Micro-benchmark of forkwatch's detector, the per-frame work of the client patch without the SDK around it:
// the SSE frame observer over realistic chunks plus what the resumed-stream observer does on a stream that is not
// being judged (a monotonic timestamp per chunk; per frame the last id, eventIdKey and the session ledger's consume). Also the per-chunk cost of the
// pass-through stream wrapper, and the memory of a tracked session and of an observed stream.
//
// Run with --expose-gc. BENCH_DETECTOR (JSON env): { forkwatchRoot, quick }. Prints one JSON line.
const { randomUUID } = require('node:crypto');
const { join } = require('node:path');

const config = JSON.parse(process.env.BENCH_DETECTOR ?? '{}');
const root = config.forkwatchRoot ?? join(__dirname, '..', 'build', 'src');
const { SseFrameObserver, SessionLedger, eventIdKey } = require(join(root, 'core', 'index.js'));
// Under client/observer/ since issue 52; an older build (forkwatchRoot) has it in client/.
const observedStream = ['observer/observed-stream.js', 'observed-stream.js'].map(file => join(root, 'client', file));
const { observeStream } = require(
  observedStream.find(file => require('node:fs').existsSync(file)) ?? observedStream[0],
);
const quick = config.quick === true;

if (typeof global.gc !== 'function') throw new Error('run with --expose-gc');
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** A session id as it arrives in an Mcp-Session-Id header: a flat string (randomUUID() builds a rope of ~20 pieces). */
const sessionId = () => decoder.decode(encoder.encode(randomUUID()));

/** A stream's worth of SSE as the SDK server writes it: `event: message`, an SDK-format id, a logging notification. */
function sdkFrames(count, { streamId = randomUUID(), bytes = 64, startMs = 1_760_000_000_000 } = {}) {
  const frames = [];
  for (let seq = 1; seq <= count; seq++) {
    const id = `${streamId}_${startMs + seq}_${Math.random().toString(36).slice(2, 10).padEnd(8, '0')}`;
    const data = JSON.stringify({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', logger: 'bench', data: { seq, text: 'x'.repeat(bytes) } },
    });
    frames.push(`event: message\nid: ${id}\ndata: ${data}\n\n`);
  }
  return frames;
}

function chunked(frames, chunkBytes) {
  if (chunkBytes === 'frame') return frames.map(f => encoder.encode(f));
  const all = encoder.encode(frames.join(''));
  const chunks = [];
  for (let i = 0; i < all.length; i += chunkBytes) chunks.push(all.slice(i, i + chunkBytes));
  return chunks;
}

const median = xs => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** ns per frame of `pass(chunks)` over `framesPerPass` frames: median of `samples` timed batches after a warm-up. */
function timePerFrame(pass, chunks, framesPerPass, { samples = quick ? 5 : 15, minBatchMs = quick ? 40 : 120 } = {}) {
  for (let i = 0; i < 30; i++) pass(chunks);
  // Batch size so that one batch lasts about minBatchMs.
  let reps = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < reps; i++) pass(chunks);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (ms >= minBatchMs) break;
    reps *= 2;
  }
  const results = [];
  for (let s = 0; s < samples; s++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < reps; i++) pass(chunks);
    results.push(Number(process.hrtime.bigint() - t0) / (reps * framesPerPass));
  }
  return { nsPerFrame: median(results), min: Math.min(...results), max: Math.max(...results) };
}

function detectorCost() {
  const FRAMES = 2048;
  const frames = sdkFrames(FRAMES);
  const ledger = new SessionLedger();
  const session = ledger.touch(randomUUID(), performance.now());
  let sink = 0;

  // What the client patch (client/resumed-stream.ts) does for a stream that is not awaiting a verdict: a monotonic
  // timestamp per chunk, and per frame the last id, eventIdKey and the ledger's consume.
  let now = 0;
  let lastId;
  const detectorPass = chunks => {
    const observer = new SseFrameObserver({
      onFrame(id) {
        if (!id) return;
        lastId = id;
        if (session.consume(eventIdKey(id), now)) sink++;
      },
      onComment() {},
    });
    for (const chunk of chunks) {
      now = performance.now();
      observer.push(chunk);
    }
    observer.end();
  };
  const observerPass = chunks => {
    const observer = new SseFrameObserver({ onFrame: id => (sink += id ? 1 : 0), onComment() {} });
    for (const chunk of chunks) observer.push(chunk);
    observer.end();
  };
  const out = {};
  for (const [name, size] of [
    ['chunks16KiB', 16 * 1024],
    ['framePerChunk', 'frame'],
  ]) {
    const chunks = chunked(frames, size);
    out[name] = {
      chunks: chunks.length,
      frames: FRAMES,
      bytesPerFrame: Math.round(chunks.reduce((n, c) => n + c.length, 0) / FRAMES),
      detector: timePerFrame(detectorPass, chunks, FRAMES),
      observerOnly: timePerFrame(observerPass, chunks, FRAMES),
    };
  }
  out.sink = sink > -1 && lastId !== '';
  return out;
}

/**
 * Per-chunk cost of the pass-through ReadableStream (observeStream) compared with reading the source directly. The
 * chunks continue one long `data:` line, so the observer's own work is a native byte search and what is left is the
 * stream machinery: one more pull, read and enqueue per chunk.
 */
async function wrapperCost() {
  const head = encoder.encode('data: ');
  const body = encoder.encode('x'.repeat(256));
  const CHUNKS = quick ? 20_000 : 100_000;
  const source = () => {
    let i = 0;
    return new ReadableStream({
      pull(controller) {
        if (i === 0) controller.enqueue(head);
        else if (i <= CHUNKS) controller.enqueue(body);
        else controller.close();
        i++;
      },
    });
  };
  const drain = async stream => {
    const reader = stream.getReader();
    for (;;) if ((await reader.read()).done) return;
  };
  const hooks = { onFrame() {}, onEnd() {} };
  const timeIt = async make => {
    const t0 = process.hrtime.bigint();
    await drain(make());
    return Number(process.hrtime.bigint() - t0) / CHUNKS;
  };
  const bare = [];
  const wrapped = [];
  for (let i = 0; i < (quick ? 4 : 9); i++) {
    bare.push(await timeIt(source));
    wrapped.push(await timeIt(() => observeStream(source(), hooks, undefined, () => {}).readable));
  }
  // The first pair is the warm-up.
  const bareNs = median(bare.slice(1));
  const wrappedNs = median(wrapped.slice(1));
  return { bareReadNsPerChunk: bareNs, wrappedReadNsPerChunk: wrappedNs, wrapperNsPerChunk: wrappedNs - bareNs };
}

function usedBytes() {
  for (let i = 0; i < 4; i++) global.gc();
  const m = process.memoryUsage();
  // The ring of each session is a Float64Array: its buffer lives outside the V8 heap.
  return m.heapUsed + m.arrayBuffers;
}

/** Bytes per tracked session: 10 000 sessions (the default maxSessions), each fed 100 frames through the observer. */
function memoryPerSession() {
  const SESSIONS = 10_000;
  const chunksBySession = [];
  for (let i = 0; i < 16; i++) chunksBySession.push(chunked(sdkFrames(100), 'frame'));
  const before = usedBytes();
  const ledger = new SessionLedger();
  for (let s = 0; s < SESSIONS; s++) {
    const session = ledger.touch(sessionId(), performance.now());
    const observer = new SseFrameObserver({ onFrame: id => id && session.consume(eventIdKey(id), performance.now()) });
    for (const chunk of chunksBySession[s % chunksBySession.length]) observer.push(chunk);
  }
  const after = usedBytes();
  if (ledger.size !== SESSIONS) throw new Error(`ledger holds ${ledger.size} sessions`);
  const sample = ledger.peek([...ledger['sessions'].keys()][0]);
  return {
    sessions: SESSIONS,
    recentIds: ledger.limits.recentIds,
    lastConsumedIdLength: sample.lastConsumedId.length,
    bytesPerSession: (after - before) / SESSIONS,
    keep: ledger.size > 0,
  };
}

/** Bytes per observed stream: 10 000 observers mid-stream (each has seen a frame and half of the next). */
function memoryPerObserver() {
  const COUNT = 10_000;
  const [first, second] = chunked(sdkFrames(2), 'frame');
  const half = second.slice(0, second.length >> 1);
  const before = usedBytes();
  const observers = [];
  for (let i = 0; i < COUNT; i++) {
    const observer = new SseFrameObserver({ onFrame() {}, onComment() {} });
    observer.push(first);
    observer.push(half);
    observers.push(observer);
  }
  const after = usedBytes();
  return { observers: observers.length, bytesPerObserver: (after - before) / COUNT };
}

async function main() {
  const memory = { session: memoryPerSession(), observer: memoryPerObserver() };
  const cost = detectorCost();
  const wrapper = await wrapperCost();
  process.stdout.write(`${JSON.stringify({ node: process.version, cost, wrapper, memory })}\n`);
}

main().catch(error => {
  process.stderr.write(`detector bench failed: ${error?.stack ?? error}\n`);
  process.exit(1);
});
