/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The supported SDK range, tested across it: @modelcontextprotocol/sdk 1.17 (oldest supported), 1.24 and the
 * latest 1.x (the root devDependency), and @modelcontextprotocol/client 2.x. Each older version lives in its
 * own app folder under test/sdk-versions (installed by .ci/run), the way a user's app pins it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { METRICS } from '../../src/shared/names';
import { runLabScenario, sample } from '../support/lab';

const versionsDir = join(__dirname, '../sdk-versions');
const installedVersion = (folder: string) =>
  JSON.parse(readFileSync(join(versionsDir, folder, 'node_modules/@modelcontextprotocol/sdk/package.json'), 'utf8'))
    .version;

const lines = [
  {
    label: '@modelcontextprotocol/sdk 1.17',
    options: { resolveFrom: join(versionsDir, 'v1.17') },
    expectVersion: /^1\.17\./,
  },
  {
    label: '@modelcontextprotocol/sdk 1.24',
    options: { resolveFrom: join(versionsDir, 'v1.24') },
    expectVersion: /^1\.24\./,
  },
  { label: '@modelcontextprotocol/client 2.x', options: { sdk: 'v2' as const } },
];

// The lines installed in an app folder of their own (the 2.x client is the root's devDependency).
const pinned = lines.filter(line => line.expectVersion !== undefined);
test.each(pinned)('$label: the app folder really pins that version', ({ options, expectVersion }) => {
  expect(installedVersion(options.resolveFrom!.split('/').pop()!)).toMatch(expectVersion!);
});

describe.each(lines)('$label', ({ options }) => {
  test.each(['cjs', 'esm'] as const)(
    '%s: a true resume is unverified (standalone stream key) and a restarted sequence is forked',
    async moduleSystem => {
      const healthy = await runLabScenario('healthy', { moduleSystem, ...options });
      expect(healthy.sdkPatched).toBe(true);
      expect(healthy.lost).toEqual([]);
      expect(
        sample(healthy.metrics, METRICS.clientResumes.prometheusName, {
          transport: 'streamable_http',
          outcome: 'unverified',
        }),
      ).toBe(1);
      expect(
        sample(healthy.metrics, METRICS.clientResumes.prometheusName, {
          transport: 'streamable_http',
          outcome: 'forked',
        }),
      ).toBe(0);
      const forked = await runLabScenario('live-fork-integer-ids', { moduleSystem, ...options });
      expect(forked.sdkPatched).toBe(true);
      expect(forked.lost.length).toBeGreaterThan(0); // the fork really lost events, and forkwatch saw it:
      expect(
        sample(forked.metrics, METRICS.clientForks.prometheusName, {
          transport: 'streamable_http',
          reason: 'id_regressed',
        }),
      ).toBe(1);
    },
  );
});
