/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A server stack is one folder under src/server/stacks/ and its row in lifecycle/targets.ts (src/server/stack.ts,
 * docs/architecture.md): the folder's index.ts exports the patch of each of its classes, every one of them is
 * reached by exactly one target of the table, and every server target of the table is a stack folder's patch. So a
 * stack added without its row, or a row whose class its folder does not patch, fails here;
 * test/folder-layers.test.ts keeps the folders apart.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ALL_TARGETS, SSE_CLIENT, STACK_PACKAGES, STREAMABLE_HTTP_CLIENT } from '../../src/lifecycle/targets';
import type { ServerStack } from '../../src/server/stack';
import { STACK_CLASSES } from '../../src/shared/names';

const stacksDir = join(__dirname, '../../src/server/stacks');
const folders = readdirSync(stacksDir, { withFileTypes: true })
  .filter(entry => entry.isDirectory())
  .map(entry => entry.name)
  .sort();

const stackOf = async (folder: string): Promise<ServerStack> =>
  ((await import(`../../src/server/stacks/${folder}/index.ts`)) as { stack: ServerStack }).stack;

describe('server stack folders', () => {
  test('the stacks are the SDK (1.x and 2.x), its 2026-07-28 path, @hono/mcp and tmcp', () => {
    expect(folders).toEqual(['hono', 'sdk', 'sdk-per-request', 'tmcp']);
  });

  test.each(folders)('%s: each class its index.ts patches is one target of lifecycle/targets.ts', async folder => {
    const { patches } = await stackOf(folder);
    expect(Object.keys(patches).length).toBeGreaterThan(0);
    for (const [exportName, patch] of Object.entries(patches)) {
      expect(patch.methods.length, exportName).toBeGreaterThan(0);
      const reaching = ALL_TARGETS.filter(t => t.exportName === exportName && t.load() === patch);
      expect(reaching, exportName).toHaveLength(1);
    }
  });

  test("every server target of lifecycle/targets.ts is a stack folder's patch", async () => {
    const stackPatches = new Set((await Promise.all(folders.map(stackOf))).flatMap(s => Object.values(s.patches)));
    const serverTargets = ALL_TARGETS.filter(t => t !== STREAMABLE_HTTP_CLIENT && t !== SSE_CLIENT);
    expect(serverTargets.length).toBe(stackPatches.size);
    for (const target of serverTargets) expect(stackPatches.has(target.load()), target.exportName).toBe(true);
  });

  test('every stack package has its row and its names (shared/names.ts), and its row classes its folder patches', () => {
    expect(Object.keys(STACK_PACKAGES).sort()).toEqual(['@hono/mcp', '@tmcp/transport-http']);
    expect(Object.keys(STACK_CLASSES).sort()).toEqual(Object.keys(STACK_PACKAGES).sort());
    for (const [pkg, row] of Object.entries(STACK_PACKAGES)) {
      expect(row.targets.length, pkg).toBeGreaterThan(0);
      for (const target of row.targets) expect(target.load().methods.length, target.exportName).toBeGreaterThan(0);
    }
  });
});
