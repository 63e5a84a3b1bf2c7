/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Memory of tmcp's held session ids, by bytes (issue 46): a real tmcp HttpTransport (test/sdk-versions/tmcp) answers
// GETS GETs, each with its own ID_CHARS-character Mcp-Session-Id (tmcp answers any id with a fresh stream, whose body
// is cancelled here). Run bare, then under forkwatch/register (synchronous or loader-thread hooks), each in its own
// process with --expose-gc; prints the heap each run kept after a full GC, and the ratio to bare.
//
//   node bench/held-session-ids.mjs            (after `node scripts/build.mjs`)
// One JSON line per run, then `bench: held ids ...`. test/server/held-sessions.test.ts runs the same child and
// asserts the instrumented run keeps under 5 MB more than the bare one.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appLoader } from '../lab/stacks/load-app.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const GETS = 3_000;
const ID_CHARS = 12_000;

async function child() {
  const load = appLoader(join(ROOT, 'test/sdk-versions/tmcp'), 'esm');
  const { McpServer } = await load('tmcp');
  const { HttpTransport } = await load('@tmcp/transport-http');
  const { ZodJsonSchemaAdapter } = await load('@tmcp/adapter-zod');
  const server = new McpServer(
    { name: 'held-ids', version: '1.0.0', description: 'bench' },
    { adapter: new ZodJsonSchemaAdapter(), capabilities: { tools: {} } },
  );
  const transport = new HttpTransport(server, { path: '/mcp' });
  const patched = Boolean(HttpTransport.prototype.respond.__wrapped);
  const get = async i => {
    const id = `${String(i).padStart(8, '0')}${'x'.repeat(ID_CHARS - 8)}`;
    const response = await transport.respond(
      new Request('http://127.0.0.1/mcp', {
        headers: { accept: 'text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
      }),
    );
    await response?.body?.cancel();
    return response?.status;
  };
  await get(-1); // what loads on first use is not counted
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      await new Promise(r => setTimeout(r, 20));
      globalThis.gc();
    }
    return process.memoryUsage();
  };
  const before = await settle();
  const statuses = new Map();
  for (let i = 0; i < GETS; i++) {
    const status = await get(i);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }
  const after = await settle();
  process.stdout.write(
    `${JSON.stringify({
      patched,
      statuses: Object.fromEntries(statuses),
      heapAddedMB: (after.heapUsed - before.heapUsed) / 2 ** 20,
      rssAddedMB: (after.rss - before.rss) / 2 ** 20,
    })}\n`,
  );
  // tmcp's transport keeps its sessions' streams: exit rather than wait for them.
  process.exit(0);
}

/** One run in its own process: `register` none (bare) or the path of forkwatch/register. */
export function runHeldIds(execPath = process.execPath, register = undefined) {
  const args = ['--expose-gc', ...(register ? ['--import', register] : []), fileURLToPath(import.meta.url), '--child'];
  const env = { ...process.env, OTEL_METRICS_EXPORTER: 'none', NODE_OPTIONS: '' };
  const out = execFileSync(execPath, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 120_000 });
  return JSON.parse(out.trim().split('\n').pop());
}

if (process.argv.includes('--child')) await child();
else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bare = runHeldIds();
  const instrumented = runHeldIds(process.execPath, join(ROOT, 'build/src/register.js'));
  console.log(JSON.stringify({ bare }));
  console.log(JSON.stringify({ instrumented }));
  console.log(
    `bench: held ids, ${GETS} GETs of ${ID_CHARS}-character ids: heap kept bare ${bare.heapAddedMB.toFixed(2)} MB, instrumented ${instrumented.heapAddedMB.toFixed(2)} MB (+${(instrumented.heapAddedMB - bare.heapAddedMB).toFixed(2)} MB); rss +${bare.rssAddedMB.toFixed(1)} / +${instrumented.rssAddedMB.toFixed(1)} MB`,
  );
}
