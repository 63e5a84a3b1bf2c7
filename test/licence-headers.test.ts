/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** Every source file carries the licence header, after a shebang line if it has one (as the contrib packages do). */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const root = join(__dirname, '..');
const HEADER = '/*\n * Copyright The forkwatch Authors\n * SPDX-License-Identifier: Apache-2.0\n */\n';

test('every tracked source file starts with the SPDX licence header', () => {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.mts', '*.cts', '*.mjs', '*.cjs', '*.js'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
  expect(files.length).toBeGreaterThan(100);
  const without = files.filter(file => {
    const text = readFileSync(join(root, file), 'utf8');
    const body = text.startsWith('#!') ? text.slice(text.indexOf('\n') + 1) : text;
    return !body.startsWith(HEADER);
  });
  expect(without).toEqual([]);
});
