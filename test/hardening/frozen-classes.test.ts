/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A host that locks the SDK's classes (Object.freeze on a prototype, or one method made non-configurable) gets no
 * exception from forkwatch, by the manual API or the require.cache route, nor from disable() when it froze them after
 * forkwatch patched them: each class it cannot patch is left whole (no method half-wrapped), named once on the
 * diagnostics channel, and not claimed by forkwatch_instrumentation_info; the app's real SDK 1.x and 2.x exchanges
 * end as they do without forkwatch. Each case runs in a process of its own (fixtures/frozen-classes-app.cjs): a
 * frozen prototype cannot be thawed for the next test.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';

interface Report {
  threw?: string;
  fatal?: string;
  diagnostics: { level: string; message: string }[];
  info: string[];
  wrappedAfterPatch: string[];
  wrappedAtEnd: string[];
  apps: { v1: string; v2: string };
}

const ROOT = join(__dirname, '../..');
const EXPORT_NAMES = [
  'InMemoryServerEventBus',
  'McpServer',
  'PerRequestHTTPServerTransport',
  'SSEClientTransport',
  'Server',
  'StreamableHTTPClientTransport',
  'WebStandardStreamableHTTPServerTransport',
];

async function run(how: string, route: string): Promise<Report> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(__dirname, 'fixtures/frozen-classes-app.cjs'), how, route],
    { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
  );
  const report = JSON.parse(stdout.trim().split('\n').pop()!) as Report;
  expect(report.fatal).toBeUndefined();
  return report;
}

/** The export names the diagnostics say `phrase` of, each message checked to be said once. */
function named(report: Report, phrase: string): string[] {
  const messages = report.diagnostics.filter(d => d.message.includes(phrase)).map(d => d.message);
  expect(new Set(messages).size, 'each said once').toBe(messages.length);
  const names = messages.map(m => EXPORT_NAMES.find(name => new RegExp(`\\b${name} ${phrase}`).test(m)));
  expect(names).not.toContain(undefined);
  return [...new Set(names as string[])].sort();
}

describe.each(['freeze', 'non-configurable'])('%s before forkwatch', how => {
  test.each(['manual', 'require_cache'])(
    'by the %s route: no throw, every class named once, none claimed, the apps as bare',
    async route => {
      const [bare, instrumented] = await Promise.all([run(how, 'bare'), run(how, route)]);
      expect(instrumented.threw).toBeUndefined();
      expect(named(instrumented, 'could not be instrumented')).toEqual(EXPORT_NAMES);
      expect(instrumented.diagnostics.filter(d => d.level === 'error')).toEqual([]);
      // Blind, and it says so: nothing patched, and the apps' MCP traffic reached no class that judges it.
      expect(instrumented.info).toEqual(['none', 'unjudged']);
      // Not one method wrapped, where a non-configurable one stopped the patch halfway before.
      expect(instrumented.wrappedAfterPatch).toEqual([]);
      expect(instrumented.apps).toEqual(bare.apps);
      if (how === 'non-configurable') expect(bare.apps).toEqual({ v1: 'one', v2: 'two' });
    },
  );
});

test('frozen after forkwatch patched them: disable() does not throw, names each class once, the apps as bare', async () => {
  const [bare, instrumented] = await Promise.all([
    run('freeze-after-patch', 'bare'),
    run('freeze-after-patch', 'manual'),
  ]);
  expect(instrumented.threw).toBeUndefined();
  expect(instrumented.wrappedAfterPatch).toHaveLength(10); // the control: all ten classes were patched
  expect(named(instrumented, 'could not be unpatched')).toEqual(EXPORT_NAMES);
  // The wrappers stayed, so the info still says so.
  expect(instrumented.wrappedAtEnd).toHaveLength(10);
  expect(instrumented.info).toEqual(EXPORT_NAMES);
  expect(instrumented.apps).toEqual(bare.apps);
  expect(bare.apps.v1).toBe('one');
});
