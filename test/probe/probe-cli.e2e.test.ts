/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The built `forkwatch` binary, run as a child process the way CI and cron would run it. */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { probeMetricNames } from '../../src/cli/probe/prometheus';
import { CONDITIONS, type ProbeReport } from '../../src/cli/probe/report';
import { builtCli, removeTemporaryBuild } from './fixtures/built-cli';
import { type EndlessMode, startEndlessServer } from './fixtures/endless-server';
import { type FixtureServer, startFixture } from './fixtures/servers';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Async, so that servers in this process (the fake Pushgateway) keep answering while the binary runs. */
function runCli(args: string[], timeoutMs = 30_000, nodeArgs: string[] = []): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, builtCli(), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', chunk => (stdout += String(chunk)));
    child.stderr.on('data', chunk => (stderr += String(chunk)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`forkwatch ${args.join(' ')} did not exit in ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('close', code => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let validating: FixtureServer;
let forgiving: FixtureServer;
const dir = mkdtempSync(join(tmpdir(), 'forkwatch-probe-e2e-'));

beforeAll(async () => {
  builtCli();
  [validating, forgiving] = await Promise.all([
    startFixture('sdk-server.mjs', ['--store', 'validating']),
    startFixture('sdk-server.mjs', ['--store', 'forgiving']),
  ]);
});

afterAll(async () => {
  await Promise.all([validating?.stop(), forgiving?.stop()]);
  removeTemporaryBuild();
  rmSync(dir, { recursive: true, force: true });
});

describe('forkwatch probe (built binary)', () => {
  test('resumable endpoint: exit 0, JSON report, Prometheus textfile that promtool accepts', async () => {
    const promFile = join(dir, 'forkwatch_probe.prom');
    const run = await runCli([
      'probe',
      validating.url,
      '--json',
      '--timeout',
      '2000',
      '--resumes',
      '3',
      '--prom-file',
      promFile,
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);

    const report = JSON.parse(run.stdout) as ProbeReport;
    expect(Object.keys(report).sort()).toEqual(
      [
        'conditions',
        'cursor',
        'durationMs',
        'exitCode',
        'notes',
        'protocol',
        'resumes',
        'schema',
        'session',
        'startedAt',
        'steps',
        'streams',
        'summary',
        'target',
        'verdict',
      ].sort(),
    );
    expect(report).toMatchObject({
      schema: 'forkwatch.probe/v1',
      verdict: 'resumable',
      exitCode: 0,
      target: validating.url,
    });
    expect(Object.keys(report.conditions)).toEqual([...CONDITIONS]);
    expect(report.resumes).toMatchObject({ attempts: 3, forkedRatio: 0, statusCodes: { '200': 3 } });
    // The session was ended.
    expect(report.steps.at(-1)).toMatchObject({ step: 'terminate', method: 'DELETE', status: 200 });

    // Atomic write: only the final file is left.
    expect(readdirSync(dir)).toEqual(['forkwatch_probe.prom']);
    const text = readFileSync(promFile, 'utf8');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.error).toBeUndefined();
    expect(check.status, check.stdout + check.stderr).toBe(0);
    for (const name of probeMetricNames()) expect(text).toContain(`# TYPE ${name} `);
    const target = `target="${validating.url}"`;
    expect(text).toContain(`forkwatch_probe_resumable{${target}} 1\n`);
    const request = `${target},stream="request"`;
    const standalone = `${target},stream="standalone"`;
    expect(text).toContain(`forkwatch_probe_condition_ok{${request},condition="bogus_cursor_refused"} 1\n`);
    expect(text).toContain(`forkwatch_probe_condition_ok{${standalone},condition="continues"} 1\n`);
    expect(text).toContain(`forkwatch_probe_resume_attempts_total{${request},outcome="resumed"} 3\n`);
    expect(text).toContain(`forkwatch_probe_resume_attempts_total{${standalone},outcome="resumed"} 3\n`);
    expect(text).toContain(`forkwatch_probe_resume_forked_ratio{${request}} 0\n`);
  });

  test('human output: a verdict per condition and exit 1 when an unknown cursor is accepted', async () => {
    const run = await runCli(['probe', forgiving.url, '--timeout', '800', '--resumes', '2']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/PASS\s+event ids on SSE streams/);
    expect(run.stdout).toMatch(/PASS\s+resume replays from the cursor/);
    expect(run.stdout).toMatch(/FAIL\s+unknown cursor refused\s+answered 200 to a cursor that never existed/);
    expect(run.stdout).toMatch(/PASS\s+repeated resumes\s+2\/2 resumed/);
    expect(run.stdout).toContain('verdict: NOT RESUMABLE (exit 1)');
  });

  test('--pushgateway PUTs the text format under job and target', async () => {
    const pushes: Array<{ method?: string; url?: string; body: string }> = [];
    const gateway = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', chunk => (body += String(chunk)));
      req.on('end', () => {
        pushes.push({ method: req.method, url: req.url, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>(resolve => gateway.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = gateway.address() as { port: number };
      const run = await runCli([
        'probe',
        validating.url,
        '--resumes',
        '1',
        '--pushgateway',
        `http://127.0.0.1:${port}/`,
      ]);
      expect(run.code).toBe(0);
      expect(pushes).toHaveLength(1);
      const target = Buffer.from(validating.url).toString('base64url');
      expect(pushes[0]).toMatchObject({ method: 'PUT', url: `/metrics/job/forkwatch_probe/target@base64/${target}` });
      expect(pushes[0]!.body).toContain('forkwatch_probe_resumable{');
    } finally {
      await new Promise(resolve => gateway.close(resolve));
    }
  });

  test('a failed output turns a pass into exit 2', async () => {
    const run = await runCli([
      'probe',
      validating.url,
      '--resumes',
      '1',
      '--prom-file',
      join(dir, 'missing-dir', 'x.prom'),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cannot write/);
  });

  test('usage errors exit 64; --help exits 0', async () => {
    const noUrl = await runCli(['probe']);
    expect(noUrl.code).toBe(64);
    expect(noUrl.stderr).toContain('expected exactly one <url>');
    const help = await runCli(['probe', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: forkwatch probe <url>');
    // What a notify tool must do, said where the option is (issue 51), and the deadline.
    expect(help.stdout).toMatch(
      /What --notify-tool needs:[\s\S]*without relatedRequestId[\s\S]*after the\s+second call/,
    );
    expect(help.stdout).toMatch(/--deadline <ms>\s+bound on the whole probe/);
    const unknown = await runCli(['frobnicate']);
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });

  test("a bad %-escape in the URL's user part: one line, exit 64, no stack trace (issue 38)", async () => {
    for (const url of ['http://a%zz:b@127.0.0.1:1/mcp', 'http://a:%@127.0.0.1:1/mcp']) {
      const run = await runCli(['probe', url]);
      expect(run.code, run.stderr).toBe(64);
      expect(run.stderr.split('\n')[0]).toBe(
        "forkwatch probe: bad %-escape in the URL's user or password (write % as %25)",
      );
      expect(run.stderr).not.toMatch(/^\s+at /m);
      expect(run.stdout).toBe('');
    }
  });

  // Issue 38: an endless frame was held whole (333 MB after 4 s, 1.1 GB after 8 s) until the step timeout.
  test.each<[EndlessMode, RegExp]>([
    ['data-lines', /an SSE frame with over 1048576 characters/],
    ['one-line', /an SSE line over 1048576 characters/],
    ['tiny-frames', /a response of over 10000 SSE frames/],
    ['json', /a body over 1048576 characters/],
  ])(
    'an endless body (%s): the probe stops at its limit with a clear error, in bounded memory',
    async (mode, error) => {
      const endless = await startEndlessServer(mode);
      // The child writes its peak RSS on exit: the limit must hold in the process that reads, not just in theory.
      const rssFile = join(dir, `rss-${mode}`);
      const preload = join(dir, 'peak-rss.cjs');
      writeFileSync(
        preload,
        `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(rssFile)}, String(process.resourceUsage().maxRSS * 1024)));\n`,
      );
      try {
        const started = Date.now();
        const run = await runCli(['probe', endless.url, '--json', '--timeout', '6000'], 30_000, ['--require', preload]);
        const elapsed = Date.now() - started;
        expect(run.code, run.stderr).toBe(2);
        const report = JSON.parse(run.stdout) as ProbeReport;
        expect(report.verdict).toBe('untestable');
        expect(report.summary).toMatch(error);
        // Well before the 6 s step timeout: the limit, not the clock, ended the read.
        expect(elapsed).toBeLessThan(4000);
        const peakRss = Number(readFileSync(rssFile, 'utf8'));
        expect(peakRss).toBeGreaterThan(10e6);
        expect(peakRss).toBeLessThan(160e6);
      } finally {
        await endless.close();
      }
    },
  );
});
