/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The published JSON Schema of `forkwatch probe --json` (schema/probe-report.schema.json) against real reports: the
 * built binary's output for deployments that reach every verdict, validated by Ajv.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROOT, builtCli } from './fixtures/built-cli';
import { type RoundRobinProxy, startRoundRobinProxy } from './fixtures/round-robin-proxy';
import { type FixtureServer, startFixture } from './fixtures/servers';

const run = promisify(execFile);
const schema = JSON.parse(readFileSync(join(ROOT, 'schema/probe-report.schema.json'), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: true });
addFormats(ajv);
const validate = ajv.compile(schema);

const servers: FixtureServer[] = [];
let proxy: RoundRobinProxy;

async function probeJson(url: string): Promise<{ code: number; report: unknown }> {
  const args = [builtCli(), 'probe', url, '--json', '--timeout', '1000', '--resumes', '4'];
  const { stdout, code } = await run(process.execPath, args).then(
    r => ({ stdout: r.stdout, code: 0 }),
    (error: { stdout: string; code: number }) => ({ stdout: error.stdout, code: error.code }),
  );
  return { code, report: JSON.parse(stdout) };
}

beforeAll(async () => {
  servers.push(
    ...(await Promise.all([
      startFixture('sdk-server.mjs', ['--store', 'validating']),
      startFixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']),
      startFixture('sdk-server.mjs', ['--store', 'forgiving', '--hydrate']),
      startFixture('modern-server.mjs', ['--legacy', 'reject']),
    ])),
  );
  proxy = await startRoundRobinProxy([servers[1]!.port, servers[2]!.port]);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await Promise.all(servers.map(s => s.stop()));
});

describe('probe-report.schema.json', () => {
  test.each([
    { name: 'resumable', url: () => servers[0]!.url, verdict: 'resumable', exit: 0 },
    { name: 'not resumable (two replicas, per-process logs)', url: () => proxy.url, verdict: 'not_resumable', exit: 1 },
    { name: 'not applicable (2026-07-28 only)', url: () => servers[3]!.url, verdict: 'not_applicable', exit: 2 },
    {
      name: 'could not test (connection refused)',
      url: () => 'http://127.0.0.1:9/mcp',
      verdict: 'untestable',
      exit: 2,
    },
  ])('a real $name report validates', async ({ url, verdict, exit }) => {
    const { code, report } = await probeJson(url());
    expect(code).toBe(exit);
    expect(report).toMatchObject({ verdict, exitCode: exit });
    const valid = validate(report);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  test('the schema rejects what it should: an unknown verdict, a missing field, an extra field', () => {
    const good = { schema: 'forkwatch.probe/v1' };
    expect(validate(good)).toBe(false); // required fields missing
    const messages = (validate.errors ?? []).map(e => e.message ?? '');
    expect(messages.some(m => m.includes("must have required property 'verdict'"))).toBe(true);
    expect(validate({ ...good, verdict: 'maybe' })).toBe(false);
    expect((validate.errors ?? []).some(e => e.instancePath === '/verdict')).toBe(true);
  });

  test('is published: in package.json files and exports', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.files).toContain('schema/*.json');
    expect(pkg.exports['./probe-report.schema.json']).toBe('./schema/probe-report.schema.json');
  });
});
