/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * The probe against hostile endpoints (issue 51): every case of fixtures/hostile-cases.ts (hangs at each step,
 * trickles, endless frames, gzip bombs, redirects to another origin, forged text, non-JSON and wrong-id answers,
 * bad and huge ids, HTTP errors) ends within 25 s of wall time at default settings (15 s for the merely broken
 * ones), with the exit code docs/probe.md documents, in both outputs, with no line the server could have forged
 * and no raw control character; every failed condition carries its evidence and one fix; and the token given with
 * --bearer never reaches the other origin. The servers run in this process, on 127.0.0.1 port 0; the probes run
 * at once (each mostly waits), in both output modes, the broken servers' after the others.
 */
import { type Server, createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runProbeCli } from '../../src/cli/probe/cli';
import type { ConditionResult, ProbeReport } from '../../src/cli/probe/report';
import { HOSTILE_CASES, HOSTILE_TOKEN, type HostileCase } from './fixtures/hostile-cases';
import { type HostileServer, startHostileServer } from './fixtures/hostile-server';

const HOSTILE_WALL_MS = 25_000;
const BROKEN_WALL_MS = 15_000;
/** Control characters but the line feed that ends lines, DEL, C1, and the Unicode line and paragraph separators. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
/** How every line of the human report starts: the probe's own words, never the server's. */
const OWN_LINE =
  /^(|forkwatch probe http:\/\/127\.0\.0\.1:\d+\/mcp| {2}protocol .*| {2}cursor ".*| {2}request stream \(POST responses\): .*| {2}standalone GET stream.*: .*| {2}(PASS|FAIL|UNTESTED|N\/A) .*| {11}(evidence|fix): .*| {2}resumes that did not resume:| {4}#\d+ .*| {4}… \d+ more .*| {2}note: .*|verdict: (RESUMABLE|NOT RESUMABLE|COULD NOT TEST|NOT APPLICABLE) \(exit [012]\)| {2}(A client|Clients|The probe|There is) .*)$/;

interface Run {
  ms: number;
  code: number;
  stdout: string;
  stderr: string;
}

const servers = new Map<string, HostileServer>();
const runs = new Map<string, Promise<[Run, Run]>>();
const caught: string[] = [];
let catcher: Server;

async function probe(url: string, json: boolean): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const started = Date.now();
  const args = [url, '--notify-tool', 'notify', '--bearer', HOSTILE_TOKEN, ...(json ? ['--json'] : [])];
  const code = await runProbeCli(args, {
    stdout: text => (stdout += text),
    stderr: text => (stderr += text),
    env: {},
  });
  return { ms: Date.now() - started, code, stdout, stderr };
}

beforeAll(async () => {
  catcher = createServer((req, res) => {
    caught.push(`${req.method} ${req.url} ${req.headers.authorization ?? '(no authorization)'}`);
    res.writeHead(500).end();
  });
  await new Promise<void>(resolve => catcher.listen(0, '127.0.0.1', resolve));
  // Another origin: another host name, another port.
  const elsewhere = `http://localhost:${(catcher.address() as { port: number }).port}/elsewhere`;
  const start = async (c: HostileCase) => {
    const server = await startHostileServer(c.server(elsewhere));
    servers.set(c.name, server);
    return Promise.all([probe(server.url, false), probe(server.url, true)]);
  };
  // The merely broken servers are timed on their own, after the hostile wave: their 15 s is the probe's design at
  // default settings, not what is left of a test process busy with ninety other probes.
  const hostile = HOSTILE_CASES.filter(c => !c.broken);
  for (const c of hostile) runs.set(c.name, start(c));
  const wave = Promise.allSettled(hostile.map(c => runs.get(c.name)));
  for (const c of HOSTILE_CASES.filter(c => c.broken))
    runs.set(
      c.name,
      wave.then(() => start(c)),
    );
});

afterAll(async () => {
  await Promise.allSettled(runs.values());
  await Promise.all([...servers.values()].map(s => s.close()));
  catcher?.closeAllConnections();
  await new Promise(resolve => catcher?.close(resolve));
});

describe('hostile endpoints', () => {
  test.each(HOSTILE_CASES.map(c => [c.name, c] as const))(
    '%s',
    async (_name, c: HostileCase) => {
      const [text, json] = await runs.get(c.name)!;
      const bound = c.broken ? BROKEN_WALL_MS : HOSTILE_WALL_MS;
      for (const run of [text, json]) {
        expect(run.ms, 'wall time').toBeLessThan(bound);
        expect(run.code, run.stdout).toBe(c.exit);
        expect(run.stdout + run.stderr).not.toMatch(RAW_CONTROL);
      }
      checkText(text.stdout, c);
      checkJson(json.stdout, c);
      // The token went to the server under test: had the probe followed a redirect, it would have gone on.
      expect(servers.get(c.name)!.requests[0]?.authorization).toBe(`Bearer ${HOSTILE_TOKEN}`);
    },
    60_000,
  );

  test('nothing reached the other origin: no redirect was followed, no token left', async () => {
    await Promise.allSettled(runs.values());
    expect(caught).toEqual([]);
  });
});

/** Every line is the probe's own; the one verdict line is the last word; each failure has one fix line. */
function checkText(stdout: string, c: HostileCase): void {
  const lines = stdout.split('\n');
  expect(lines.filter(l => !OWN_LINE.test(l))).toEqual([]);
  const verdicts = lines.filter(l => /^\s*verdict:/.test(l));
  expect(verdicts).toHaveLength(1);
  expect(verdicts[0]).toMatch(new RegExp(`\\(exit ${c.exit}\\)$`));
  const failures = lines.filter(l => /^ {2}FAIL /.test(l)).length;
  expect(lines.filter(l => /^ {11}fix: \S/.test(l))).toHaveLength(failures);
  expect(lines.filter(l => /^ {11}evidence: \{/.test(l))).toHaveLength(failures);
  if (c.exit === 1) expect(failures).toBeGreaterThan(0);
  // The forged text was shown, quoted inside a line of the probe's: escaped, not dropped.
  if (c.forges) expect(stdout).toMatch(/^ .*verdict: RESUMABLE \(exit 0\)/m);
}

function checkJson(stdout: string, c: HostileCase): void {
  const report = JSON.parse(stdout) as ProbeReport;
  expect(report).toMatchObject({ exitCode: c.exit });
  const all: ConditionResult[] = [
    ...Object.values(report.conditions),
    ...Object.values(report.streams.standalone.conditions),
  ];
  for (const failure of all.filter(r => r.status === 'fail')) {
    expect(failure.fix, failure.detail).toMatch(/^\S.{40,}$/);
    expect(typeof failure.cause).toBe('string');
    expect(Object.keys(failure.evidence ?? {}).length, failure.detail).toBeGreaterThan(0);
  }
}
