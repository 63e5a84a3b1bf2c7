/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The lab loads forkwatch from build/. A build older than src/ would test old code without a word, so every lab
// process checks first, and a stale or missing build is an error that says what to run (`npm run lab` and `npm test`
// build first; a single test file run with vitest does not).
const { existsSync, readdirSync, statSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const BUILD_ENTRIES = ['build/src/index.js', 'build/esm/index.mjs'];

function newestSource(dir) {
  let newest = { file: '', mtimeMs: 0 };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    const candidate = entry.isDirectory() ? newestSource(file) : { file, mtimeMs: statSync(file).mtimeMs };
    if (candidate.mtimeMs > newest.mtimeMs) newest = candidate;
  }
  return newest;
}

/** Throws unless build/ exists and is newer than every file in src/. Only for entries inside this repo's build/. */
function assertFreshBuild(entry) {
  if (entry !== undefined && !path.resolve(entry).startsWith(path.join(root, 'build') + path.sep)) return;
  const fix = 'run `node scripts/build.mjs` (npm test and npm run lab build first)';
  for (const rel of BUILD_ENTRIES) {
    const built = path.join(root, rel);
    if (!existsSync(built)) throw new Error(`forkwatch lab: ${rel} is missing: ${fix}`);
    const source = newestSource(path.join(root, 'src'));
    if (source.mtimeMs > statSync(built).mtimeMs) {
      throw new Error(
        `forkwatch lab: ${rel} is older than ${path.relative(root, source.file)}, so the lab would test old code: ${fix}`,
      );
    }
  }
}

module.exports = { assertFreshBuild };
