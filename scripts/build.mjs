/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Compiles src/ to CommonJS (build/src: JavaScript without comments, declarations with them) and writes thin ESM
// entry points (build/esm) that re-export it, so ESM and CommonJS users share one copy of the instrumentation state.
// Bundles the alerting pack (pack/cli.ts) with its renderers (yaml, the Grafana foundation SDK, the PromQL parser)
// into one file, build/pack/forkwatch-pack.js, that `forkwatch pack` loads: the installed package needs none of them
// as a dependency.
//
// It writes a new build beside the old one and swaps them at the end: processes that run the old build meanwhile
// (a test's app, while another test's `npm pack` runs prepack in the same folder) never see a half-written one.
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const final = join(root, 'build');
const out = join(root, `build.next-${process.pid}`);
rmSync(out, { recursive: true, force: true });
const tsc = (...args) =>
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json'), '--outDir', out, ...args],
    {
      stdio: 'inherit',
    },
  );
// The declarations keep their doc comments (editors show them); the JavaScript drops every comment. Its source text
// stays in the host's heap for as long as the process runs, and a third of it was comments (docs/benchmark.md).
tsc('--emitDeclarationOnly');
tsc('--declaration', 'false', '--removeComments');

const require = createRequire(import.meta.url);
const esmEntries = { 'index.mjs': '../src/index.js', 'prom-client.mjs': '../src/prom-client.js' };
mkdirSync(join(out, 'esm'), { recursive: true });
for (const [file, target] of Object.entries(esmEntries)) {
  let names;
  try {
    names = Object.keys(require(join(out, 'esm', target)));
  } catch {
    continue; // entry not written yet
  }
  const body = [
    `import cjs from '${target}';`,
    ...names.filter(n => n !== 'default' && n !== '__esModule').map(n => `export const ${n} = cjs.${n};`),
    'export default cjs;',
    '',
  ].join('\n');
  writeFileSync(join(out, 'esm', file), body);
}

const esbuild = require('esbuild');
esbuild.buildSync({
  entryPoints: [join(root, 'pack/cli.ts')],
  outfile: join(out, 'pack/forkwatch-pack.js'),
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  legalComments: 'eof',
  logLevel: 'warning',
});

// The swap: the old build moves aside in one rename and the new one takes its place in the next. A build of the
// same folder that finished in between (two `npm pack`s at once) already put the same sources' build in place: ours
// is dropped.
const old = join(root, `build.old-${process.pid}`);
const tolerate = (codes, fn) => {
  try {
    fn();
    return true;
  } catch (error) {
    if (!codes.includes(error.code)) throw error;
    return false;
  }
};
tolerate(['ENOENT'], () => renameSync(final, old));
if (!tolerate(['ENOTEMPTY', 'EEXIST'], () => renameSync(out, final))) rmSync(out, { recursive: true, force: true });
rmSync(old, { recursive: true, force: true });
