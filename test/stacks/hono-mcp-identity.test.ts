/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @hono/mcp's exported `StreamableHTTPTransport` as a host sees it, in a process of its own: bare, and with
 * `forkwatch/register` preloaded (`--require` and `--import`), its CommonJS and its ESM build. forkwatch puts a
 * stand-in in the module's exports (src/server/stacks/hono/event-store.ts); everything the host can ask of the class must
 * answer as without it: `new X().constructor === X`, `X.prototype.constructor`, `toString()`, a static's `this`, a
 * subclass's statics, and a throwing constructor runs once, its own error reaching the caller, nothing on stderr.
 *
 * The one answer a Proxy cannot give is `Function.prototype.toString.call(X)` (a Proxy's `[native code]` text):
 * asserted here as the known difference docs/host-suite.md lists, so that a change is seen.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AppDir, ROOT, cleanEnv, makeAppDir } from '../register/support';

const HONO_APP = join(ROOT, 'test/sdk-versions/hono-mcp');

/** Prints what the host can see of the class, as JSON on stdout, once forkwatch/register has decided. */
const CHECK = `
function report(hono) {
  const T = hono.StreamableHTTPTransport;
  const out = {};
  out.patched = T.prototype.handleRequest.__wrapped === true;
  out.constructorIsExport = new T().constructor === T;
  out.protoConstructorIsExport = T.prototype.constructor === T;
  out.toString = T.toString();
  out.template = \`\${T}\`;
  out.functionToString = Function.prototype.toString.call(T);
  T.self = function () { return this; };
  out.staticThisIsExport = T.self() === T;
  class Sub extends T { static make() { return new this(); } }
  out.subclassStatic = Sub.make() instanceof Sub && Sub.make() instanceof T;
  out.ownNames = Object.getOwnPropertyNames(T);
  out.name = T.name;
  out.length = T.length;
  for (const store of [false, true]) {
    const boom = new Error('boom');
    let reads = 0;
    const options = { get sessionIdGenerator() { reads++; throw boom; } };
    if (store) options.eventStore = new hono.MemoryEventStore();
    let caught;
    try { new T(options); } catch (error) { caught = error; }
    out[store ? 'throwingWithStore' : 'throwingWithoutStore'] = { runs: reads, own: caught === boom };
  }
  process.stdout.write(JSON.stringify(out));
}
`;

let app: AppDir;

beforeAll(() => {
  app = makeAppDir([]);
  const honoPackage = JSON.stringify(join(HONO_APP, 'package.json'));
  writeFileSync(
    join(app.dir, 'check.cjs'),
    `const hono = require('node:module').createRequire(${honoPackage})('@hono/mcp');\n${CHECK}\nsetImmediate(() => report(hono));\n`,
  );
  writeFileSync(
    join(app.dir, 'check.mjs'),
    `import { createRequire } from 'node:module';\nimport { pathToFileURL } from 'node:url';\n` +
      `const cjs = createRequire(${honoPackage}).resolve('@hono/mcp');\n` +
      `const hono = await import(pathToFileURL(cjs.replace(/index\\.cjs$/, 'index.mjs')).href);\n${CHECK}\nsetImmediate(() => report(hono));\n`,
  );
}, 120_000);

afterAll(() => app?.remove());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(script: string, nodeOptions: string | undefined): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], {
      cwd: app.dir,
      env: cleanEnv({ NODE_OPTIONS: nodeOptions, OTEL_METRICS_EXPORTER: 'none' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', chunk => (stdout += chunk));
    child.stderr.on('data', chunk => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', code => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.each(['check.cjs', 'check.mjs'])('@hono/mcp StreamableHTTPTransport identity, %s', script => {
  test.each(['--require forkwatch/register', '--import forkwatch/register'])(
    'NODE_OPTIONS=%s: the class answers as bare',
    async options => {
      const [bare, instrumented] = await Promise.all([run(script, undefined), run(script, options)]);
      expect(bare).toMatchObject({ code: 0, stderr: '' });
      expect(instrumented).toMatchObject({ code: 0, stderr: '' });
      const b = JSON.parse(bare.stdout);
      const i = JSON.parse(instrumented.stdout);
      // The comparison means something only if forkwatch did replace the class.
      expect(b.patched).toBe(false);
      expect(i.patched).toBe(true);
      expect(b).toMatchObject({
        constructorIsExport: true,
        protoConstructorIsExport: true,
        staticThisIsExport: true,
        subclassStatic: true,
        throwingWithoutStore: { runs: 1, own: true },
        throwingWithStore: { runs: 1, own: true },
      });
      expect(b.toString).toMatch(/^class /);
      // The known difference (a Proxy's source text), and nothing else.
      expect(b.functionToString).toBe(b.toString);
      expect(i.functionToString).toBe('function () { [native code] }');
      const { patched: _b, functionToString: _bf, ...bareRest } = b;
      const { patched: _i, functionToString: _if, ...instrumentedRest } = i;
      expect(instrumentedRest).toEqual(bareRest);
    },
    60_000,
  );
});
