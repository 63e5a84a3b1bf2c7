/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { autoCodec, detectCodec } from '../../src/core';

const coreDir = join(__dirname, '../../src/core');

describe('the continuity core stays pure', () => {
  test('src/core imports nothing but its own modules', () => {
    const files = readdirSync(coreDir).filter(f => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const file of files) {
      const source = readFileSync(join(coreDir, file), 'utf8');
      const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)].map(
        m => m[1],
      );
      for (const specifier of specifiers) expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\/[\w-]+$/);
    }
  });

  test('codecs answer adversarial 4 KiB ids quickly (no catastrophic regex backtracking)', () => {
    const ids = [
      '_'.repeat(4096),
      `${'_'.repeat(4080)}1732000000000_a`,
      '_1111111111'.repeat(372),
      `${'_1111111111_aaaa'.repeat(256)}!`,
      ':'.repeat(4096),
      ':0'.repeat(2048),
      `a:${'0'.repeat(4093)}z`,
      '1'.repeat(4096),
    ];
    // Catastrophic backtracking on any of these takes minutes, past the test timeout; the time is logged, not bounded.
    const start = performance.now();
    for (const id of ids) expect(autoCodec.decode(id)).toEqual(detectCodec(id)?.decode(id));
    process.stderr.write(
      `codecs: ${ids.length} adversarial 4 KiB ids decoded in ${(performance.now() - start).toFixed(1)} ms\n`,
    );
  });
});
