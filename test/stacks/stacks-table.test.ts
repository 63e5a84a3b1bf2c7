/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The stacks table (docs/stacks.md, moved from the README in issue 51) is kept true: every stack of issue 39 has a row; a tested row's range holds the version
 * its app folder pins (package.json and lockfile) and names a test file that exists and runs that folder; a stack
 * nobody can pin says why and what covers it instead; and every stack app folder has a row.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = join(__dirname, '../..');
const readme = readFileSync(join(root, 'docs/stacks.md'), 'utf8');
const HEADING = 'Stacks: what forkwatch sees in each';
const PLACEHOLDER = 'TODO(integrator)';
/** App folders that pin something other than an MCP stack: undici 6, the package an app may send fetch through. */
const NOT_STACKS = new Set(['undici6']);

interface Row {
  stack: string;
  versions: string;
  side: string;
  sees: string;
  where: string;
}

function stackRows(): Row[] {
  const section = readme.split(/^## /m).find(s => s.startsWith(HEADING));
  if (!section) throw new Error(`docs/stacks.md has no "## ${HEADING}" section`);
  return section
    .split('\n')
    .filter(l => l.startsWith('| `'))
    .map(l => {
      const [stack, versions, side, sees, where] = l.split(' | ').map(c => c.replace(/^\| |\s*\|$/g, '').trim());
      return { stack: stack!, versions: versions!, side: side!, sees: sees!, where: where! };
    });
}

const rows = stackRows();
const packageOf = (row: Row) => /^`([^`]+)`/.exec(row.stack)![1]!;
const paths = (cell: string) => [...cell.matchAll(/`(test\/[^`]+)`/g)].map(m => m[1]!);
const pinnedRows = rows.filter(r => r.versions.includes('(pinned '));
const readJson = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8'));

describe('docs/stacks.md stacks table', () => {
  test("has a row for every stack of issue 39's table, with its side", () => {
    const sides = Object.fromEntries(rows.map(r => [packageOf(r), r.side]));
    expect(sides).toMatchObject({
      fastmcp: 'server',
      'mcp-proxy': 'server',
      '@langchain/mcp-adapters': 'client',
      '@openai/agents': 'client',
      '@mastra/mcp': 'client',
      'mcp-handler': 'server',
      '@vercel/mcp-adapter': 'server',
      tmcp: 'server',
      '@hono/mcp': 'server',
      'mcp-remote': 'client',
      'mcp-use': 'server',
      agents: 'server',
    });
  });

  test.each(pinnedRows.map(r => [packageOf(r), r] as const))(
    '%s: the range holds the pinned version of its app folder, and its test runs that folder',
    (pkg, row) => {
      const [, major, minor, pinned] = /^`(\d+)\.(\d+)\.x` \(pinned (\d+\.\d+\.\d+)\)$/.exec(row.versions) ?? [];
      expect(pinned, row.versions).toBeDefined();
      expect(pinned!.startsWith(`${major}.${minor}.`)).toBe(true);
      const [folder, testFile, ...rest] = paths(row.where);
      expect(folder).toMatch(/^test\/sdk-versions\/[^/]+$/);
      expect(testFile).toMatch(/^test\/stacks\/.+\.test\.ts$/);
      expect(rest).toEqual([]);
      expect(readJson(`${folder}/package.json`).dependencies[pkg]).toBe(pinned);
      expect(readJson(`${folder}/package-lock.json`).packages[`node_modules/${pkg}`].version).toBe(pinned);
      expect(existsSync(join(root, testFile!)), testFile).toBe(true);
      // The folder named as a string of its own or at the end of a path: 'mastra-mcp', '../sdk-versions/ai-sdk-mcp'.
      const name = folder!.split('/').pop()!;
      expect(readFileSync(join(root, testFile!), 'utf8')).toMatch(new RegExp(`['/]${name.replace(/\./g, '\\.')}'`));
    },
  );

  test('a stack nobody can pin says why, and names what covers it and the tests that exist for that', () => {
    const unpinned = rows.filter(r => !r.versions.includes('(pinned ') && !r.versions.includes(PLACEHOLDER));
    expect(unpinned.map(packageOf).sort()).toEqual(['agents', 'mcp-use']);
    for (const row of unpinned) {
      expect(row.versions).toMatch(/^not pinned \(.+ measured\)$/);
      expect(row.sees).toMatch(/blind|cannot run/);
      expect(row.sees).toMatch(/[Cc]overed by .*`forkwatch probe`/);
      expect(paths(row.where).length).toBeGreaterThan(0);
      for (const path of paths(row.where)) expect(existsSync(join(root, path)), path).toBe(true);
    }
  });

  test('a placeholder row is marked as one in every cell but the stack and its side', () => {
    for (const row of rows.filter(r => [r.versions, r.sees, r.where].some(c => c.includes(PLACEHOLDER)))) {
      expect(row.versions).toBe(PLACEHOLDER);
      expect(row.sees.startsWith(`${PLACEHOLDER}: covered by the `)).toBe(true);
      expect(row.where).toBe(PLACEHOLDER);
    }
  });

  test('every patched server stack that keeps sessions says what its delivery ledger counts (server/stack.ts)', () => {
    // A stack behind the one stack interface hands the ledger its sessions' deliveries: its row says so. The stateless
    // ones have no session, and nothing to deliver later.
    const withSessions = rows.filter(
      r => r.side === 'server' && r.sees.startsWith('patched') && !/stateless/.test(r.sees),
    );
    expect(withSessions.map(packageOf).sort()).toEqual(['@hono/mcp', 'fastmcp', 'mcp-proxy', 'tmcp']);
    for (const row of withSessions) {
      expect(row.sees, packageOf(row)).toMatch(/delivery ledger|forkwatch_server_undelivered_events_total/i);
      expect(row.sees, packageOf(row)).not.toMatch(/no delivery ledger/);
    }
  });

  test('every stack app folder in test/sdk-versions has a row (the v<major.minor> folders pin the MCP SDK itself)', () => {
    const folders = readdirSync(join(root, 'test/sdk-versions')).filter(
      f => !/^v\d/.test(f) && !NOT_STACKS.has(f) && existsSync(join(root, 'test/sdk-versions', f, 'package.json')),
    );
    const inTable = new Set(pinnedRows.map(r => paths(r.where)[0]!.split('/').pop()));
    for (const folder of folders) expect(inTable.has(folder), folder).toBe(true);
  });
});
