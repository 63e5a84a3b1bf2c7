/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Loads a package the way an app in the folder STACK_APP would: `require` for a CommonJS app (STACK_SERVER.moduleSystem
// 'cjs'), `import` for an ESM app (the package's `exports['.'].import`, found as Node finds it from that folder).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export function appLoader(appFolder, moduleSystem = 'esm') {
  const require = createRequire(join(appFolder, 'resolve-from.js'));
  if (moduleSystem === 'cjs') return async spec => require(spec);
  return async spec => {
    for (let dir = appFolder; ; dir = dirname(dir)) {
      const base = join(dir, 'node_modules', spec);
      let manifest;
      try {
        manifest = JSON.parse(readFileSync(join(base, 'package.json'), 'utf8'));
      } catch {
        if (dirname(dir) === dir) throw new Error(`${spec} not found from ${appFolder}`);
        continue;
      }
      const root = manifest.exports?.['.'] ?? manifest.exports;
      const target =
        (typeof root?.import === 'string' ? root.import : root?.import?.default) ?? manifest.module ?? manifest.main;
      return import(pathToFileURL(join(base, target)).href);
    }
  };
}
